/**
 * The galaxy at scale, on SQLite: for each size, a database of generated entries (40 topics,
 * test/galaxy/corpus.ts) is laid out by `nonsense galaxy` (compiled, under the background thread's heap
 * limit), then
 *
 * - layout: wall and CPU time (of all its threads: GALAXY_THREADS as set, else one a core up to 8),
 *   CPU per star, and the computing process's peak RSS against a baseline process that opens the same
 *   database and does nothing (`nonsense token list`);
 * - placement: 100 new entries placed into the stored layout by a new process (model read back first);
 * - serving (`nonsense serve`, GALAXY=off): the galaxy CSV and JSON streamed from the stored answer,
 *   first (the process's first request) and again, after another process changed the entries (the
 *   changes since the answer read from the change log), a 304; the time to the first byte and to the
 *   last; against the full CSV export of the same entries and /healthz in the same run;
 * - the background thread (`nonsense serve`, GALAXY=auto): seconds until 10 entries added by another
 *   process are served.
 *
 *   npm run bench:galaxy                          # 10,000 and 100,000 entries
 *   GALAXY_BENCH_SIZES=1000000 npm run bench:galaxy
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config.ts';
import { migrate, openDatabase } from '../src/db/database.ts';
import { WORKER_MAX_HEAP_MB } from '../src/services/galaxy/background.ts';
import { createStorage } from '../src/storage/index.ts';
import { topicCorpus } from '../test/galaxy/corpus.ts';
import { median, runCommand as run, startService } from './lib.ts';

const SIZES = (process.env.GALAXY_BENCH_SIZES ?? '10000,100000').split(',').map(Number);
const PORT = Number(process.env.GALAXY_BENCH_PORT ?? 18291);
const BASE = `http://127.0.0.1:${PORT}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nonsense-galaxy-bench-'));

async function seed(file: string, count: number): Promise<number> {
  const database = await openDatabase(loadConfig({ DATABASE_URL: file }).database);
  await migrate(database);
  const storage = createStorage(database);
  let added = 0;
  let batch: { uuid: string; text: string; timestamp: number }[] = [];
  let n = 0;
  for (const { text } of topicCorpus(count, 7)) {
    batch.push({ uuid: randomUUID(), text, timestamp: 1_600_000_000 + n++ });
    if (batch.length === 10_000) {
      added += (await storage.entries.insertEntries(batch)).added;
      batch = [];
    }
  }
  added += (await storage.entries.insertEntries(batch)).added;
  await database.close();
  return added;
}

async function addEntries(file: string, count: number, seedNumber: number): Promise<string[]> {
  const database = await openDatabase(loadConfig({ DATABASE_URL: file }).database);
  const storage = createStorage(database);
  const entries = [...topicCorpus(count, seedNumber)].map(({ text }, i) => ({ uuid: randomUUID(), text: `${text} (${seedNumber}.${i})`, timestamp: 1_700_000_000 + i }));
  await storage.entries.insertEntries(entries);
  await database.close();
  return entries.map((e) => e.uuid);
}

/**
 * timed reads a URL to its end: seconds, bytes, status. node:http rather than fetch: fetch adds
 * `Cache-Control: no-cache` to a request with If-None-Match, which asks for the full body.
 */
function timed(url: string, headers: Record<string, string> = {}): Promise<{ seconds: number; firstByte: number; bytes: number; status: number; etag: string }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers }, (res) => {
        let bytes = 0;
        let firstByte = -1;
        res.on('data', (chunk: Buffer) => {
          if (firstByte < 0) firstByte = (performance.now() - started) / 1000;
          bytes += chunk.length;
        });
        res.on('end', () =>
          resolve({ seconds: (performance.now() - started) / 1000, firstByte: Math.max(0, firstByte), bytes, status: res.statusCode ?? 0, etag: String(res.headers.etag ?? '') }),
        );
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

const ms = (seconds: number) => `${Math.round(seconds * 1000)} ms`;

const rows: string[] = [];
for (const size of SIZES) {
  const file = path.join(dir, `galaxy-${size}.db`);
  const env = { DATABASE_URL: file };
  const seeded = await seed(file, size);
  const load = () => os.loadavg()[0]!.toFixed(1);
  console.log(`\n${seeded} entries seeded (load average ${load()})`);

  const baseline = await run(['token', 'list'], env);
  const layout = await run(['galaxy'], { ...env, NODE_OPTIONS: `--max-old-space-size=${WORKER_MAX_HEAP_MB}` });
  console.log(
    `layout: ${layout.stdout} (${layout.seconds.toFixed(1)} s wall, ${layout.cpu.toFixed(1)} s CPU of all its threads, ${((layout.cpu * 1000) / seeded).toFixed(3)} ms CPU a star, ` +
      `peak RSS ${layout.peakMiB.toFixed(0)} MiB; baseline process ${baseline.peakMiB.toFixed(0)} MiB)`,
  );

  await addEntries(file, 100, 101);
  const place = await run(['galaxy'], env);
  console.log(`placement of 100 new entries by a new process: ${place.stdout} (${place.seconds.toFixed(1)} s wall, ${place.cpu.toFixed(1)} s CPU)`);

  const service = await startService({ DATABASE_URL: file, PORT: String(PORT), LOG_LEVEL: 'warn', RATE_LIMIT_READ: 'off', GALAXY: 'off' }, '/readyz');
  let serving: Record<string, number> | undefined;
  try {
    const health: number[] = [];
    for (let i = 0; i < 5; i++) health.push((await timed(`${BASE}/healthz`)).seconds);
    const csvFirst = await timed(`${BASE}/api/v1/nonsense/galaxy`);
    const jsonFirst = await timed(`${BASE}/api/v1/nonsense/galaxy?format=json`);
    const csv: number[] = [];
    const json: number[] = [];
    const exportCsv: number[] = [];
    for (let i = 0; i < 3; i++) {
      csv.push((await timed(`${BASE}/api/v1/nonsense/galaxy`)).seconds);
      json.push((await timed(`${BASE}/api/v1/nonsense/galaxy?format=json`)).seconds);
      exportCsv.push((await timed(`${BASE}/api/v1/nonsense?format=csv`)).seconds);
    }
    const revalidated = await timed(`${BASE}/api/v1/nonsense/galaxy`, { 'if-none-match': csvFirst.etag });
    // Another process adds an entry: the next request reads the changes since the stored answer.
    await addEntries(file, 1, 404);
    await sleep(1200);
    const afterChange = await timed(`${BASE}/api/v1/nonsense/galaxy`);
    serving = {
      csvFirst: csvFirst.seconds,
      csvFirstByte: csvFirst.firstByte,
      csvAfterChangeFirstByte: afterChange.firstByte,
      csv: median(csv),
      csvAfterChange: afterChange.seconds,
      jsonFirst: jsonFirst.seconds,
      json: median(json),
      exportCsv: median(exportCsv),
      health: median(health),
      notModified: revalidated.seconds,
    };
    console.log(
      `serving: galaxy CSV ${(csvFirst.bytes / 1e6).toFixed(1)} MB first ${ms(csvFirst.seconds)} (first byte ${ms(csvFirst.firstByte)}), again ${ms(median(csv))}; ` +
        `JSON ${(jsonFirst.bytes / 1e6).toFixed(1)} MB first ${ms(jsonFirst.seconds)}, again ${ms(median(json))}; 304 ${ms(revalidated.seconds)} (${revalidated.status}); ` +
        `CSV after another process added an entry ${ms(afterChange.seconds)} (first byte ${ms(afterChange.firstByte)}); ` +
        `full CSV export ${ms(median(exportCsv))}; /healthz ${ms(median(health))}`,
    );
  } finally {
    await service.stop();
  }

  // The background thread: a server that starts with a stored layout, and entries added by another process.
  const background = await startService({ DATABASE_URL: file, PORT: String(PORT), LOG_LEVEL: 'warn', RATE_LIMIT_READ: 'off', GALAXY: 'auto' }, '/readyz');
  let firstSeconds: number | undefined;
  let nextSeconds: number | undefined;
  try {
    const served = async () => (await (await fetch(`${BASE}/api/v1/nonsense/galaxy`)).text());
    const waitFor = async (uuids: string[]) => {
      const started = performance.now();
      for (;;) {
        const body = await served();
        if (uuids.every((uuid) => body.includes(uuid))) return (performance.now() - started) / 1000;
        await sleep(250);
      }
    };
    firstSeconds = await waitFor(await addEntries(file, 10, 202));
    nextSeconds = await waitFor(await addEntries(file, 10, 303));
    console.log(`background thread: 10 new entries served after ${firstSeconds.toFixed(1)} s (first, model read back), then 10 more after ${nextSeconds.toFixed(1)} s`);
  } finally {
    await background.stop();
  }

  rows.push(
    `| ${seeded.toLocaleString('en')} | ${layout.seconds.toFixed(0)} s (${layout.cpu.toFixed(0)} s CPU) | ${layout.peakMiB.toFixed(0)} MiB (+${(layout.peakMiB - baseline.peakMiB).toFixed(0)}) | ` +
      `${place.seconds.toFixed(1)} s (${place.cpu.toFixed(1)} s CPU) | ${firstSeconds.toFixed(1)} s / ${nextSeconds.toFixed(1)} s | ` +
      `${ms(serving.csvFirst!)} / ${ms(serving.csv!)} / ${ms(serving.csvAfterChange!)} | ${ms(serving.csvFirstByte!)} / ${ms(serving.csvAfterChangeFirstByte!)} | ${ms(serving.jsonFirst!)} / ${ms(serving.json!)} | ${ms(serving.notModified!)} | ${ms(serving.exportCsv!)} | ${ms(serving.health!)} |`,
  );
  rows[rows.length - 1] += ` ${load()} |`;
  fs.rmSync(file, { force: true });
}

console.log('\n| entries | layout (`nonsense galaxy`) | peak RSS (+ over a process that only opens the database) | 100 placed by a new process | background: 10 new served after (first / next) | galaxy CSV first / again / after a change of the entries | first byte: first / after a change | JSON first / again | 304 | full CSV export (baseline) | /healthz | load average at the end (2 cores) |');
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
for (const row of rows) console.log(row);
fs.rmSync(dir, { recursive: true, force: true });
