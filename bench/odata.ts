/**
 * The OData v2 interface over a large database (1,000,000 entries by default): the whole feed with
 * `all=true` in Atom and in JSON (wall time, size, the serving process's peak RSS above its idle
 * RSS, from VmHWM in /proc/<pid>/status, target: under 150 MB above idle; and the latency of
 * `/healthz` probed every 20 ms meanwhile), then requests/s of single pages of 100 with a `$filter`,
 * measured with autocannon.
 *
 *   npm run bench:odata
 *   ODATA_BENCH_ENTRIES=200000 ODATA_BENCH_SECONDS=5 npm run bench:odata
 *   ODATA_BENCH_DATABASE=postgres npm run bench:odata      # on the server of TEST_POSTGRES_URL
 *   ODATA_BENCH_DATABASE_URL=/tmp/big.db npm run bench:odata   # reuse a database seeded before (bench/odata-seed.ts)
 *   ODATA_BENCH_SECONDS=0 npm run bench:odata               # whole feeds only, no autocannon
 *
 * The service runs as its own process (`nonsense serve`), with rate limits, the event-loop overload
 * refusal and the galaxy's layout thread off, so that the figures are the feed's and not its
 * neighbours'.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { FIRST_TIMESTAMP, seedOData } from './odata-seed.ts';
import { startService } from './lib.ts';

const ENTRIES = Number(process.env.ODATA_BENCH_ENTRIES ?? 1_000_000);
const SECONDS = Number(process.env.ODATA_BENCH_SECONDS ?? 10);
const PORT = Number(process.env.ODATA_BENCH_PORT ?? 18421);
const ENGINE = process.env.ODATA_BENCH_DATABASE === 'postgres' ? 'postgres' : 'sqlite';
const PG_SERVER = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const RSS_TARGET_MB = 150;
const GIVEN = process.env.ODATA_BENCH_DATABASE_URL;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nonsense-odata-bench-'));
const pgName = `nonsense_odata_bench_${Date.now()}`;
const databaseUrl = GIVEN ?? (ENGINE === 'postgres' ? Object.assign(new URL(PG_SERVER), { pathname: `/${pgName}` }).href : path.join(dir, 'odata.db'));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type StatusField = 'VmRSS' | 'VmHWM' | 'RssAnon' | 'RssFile';

/** mb reads a memory figure of a process from /proc/<pid>/status, in MB (Linux). VmHWM is the peak RSS. */
function mb(pid: number, field: StatusField): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match![1]) / 1024;
}

/**
 * sampleMemory polls the anonymous (heap, buffers) and file-backed parts of the RSS every 50 ms until
 * stopped, and returns their maxima. VmHWM counts both; on SQLite the file-backed part is the database
 * file mapped by `mmap_size`, page cache that the kernel can drop, not memory the process allocated.
 */
function sampleMemory(pid: number): () => { anon: number; file: number } {
  const max = { anon: 0, file: 0 };
  const sample = () => {
    max.anon = Math.max(max.anon, mb(pid, 'RssAnon'));
    max.file = Math.max(max.file, mb(pid, 'RssFile'));
  };
  sample();
  const timer = setInterval(sample, 50);
  return () => {
    clearInterval(timer);
    sample();
    return max;
  };
}

/** readAll streams a whole-feed response, counting bytes and entries (`</entry>` in Atom, `"__metadata"` in JSON). */
async function readAll(url: string, marker: string): Promise<{ seconds: number; bytes: number; entries: number }> {
  const started = Date.now();
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  const decoder = new TextDecoder();
  let bytes = 0;
  let entries = 0;
  let carry = '';
  for await (const chunk of res.body!) {
    bytes += (chunk as Uint8Array).byteLength;
    const text = carry + decoder.decode(chunk as Uint8Array, { stream: true });
    for (let at = text.indexOf(marker); at !== -1; at = text.indexOf(marker, at + marker.length)) entries++;
    carry = text.slice(-(marker.length - 1));
  }
  return { seconds: (Date.now() - started) / 1000, bytes, entries };
}

/** probeHealth asks for /healthz every 20 ms on its own connection until stopped; returns p50, p95 and max in ms. */
function probeHealth(base: string): () => Promise<{ p50: number; p95: number; max: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const ms: number[] = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const started = performance.now();
      await new Promise<void>((resolve) => http.get(`${base}/healthz`, { agent }, (res) => res.resume().on('end', resolve)).on('error', () => resolve()));
      ms.push(performance.now() - started);
      await sleep(20);
    }
  })();
  return async () => {
    stopped = true;
    await loop;
    agent.destroy();
    const sorted = [...ms].sort((a, b) => a - b);
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
    return { p50: at(0.5), p95: at(0.95), max: sorted.at(-1) ?? 0 };
  };
}

async function rps(base: string, requestPath: string): Promise<string> {
  const before = await fetch(base + requestPath);
  const body = await before.text();
  if (!before.ok) throw new Error(`${requestPath}: ${before.status} ${body}`);
  const result = await autocannon({ url: base + requestPath, connections: 10, duration: SECONDS });
  return `${result.requests.average.toFixed(0)} req/s (p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, ${result.errors + result.non2xx} errors)`;
}

let admin: pg.Client | undefined;
if (!GIVEN && ENGINE === 'postgres') {
  admin = new pg.Client({ connectionString: PG_SERVER });
  await admin.connect();
  await admin.query(`create database ${pgName}`);
}
try {
  if (!GIVEN) console.log(`seeding ${ENTRIES} entries on ${ENGINE}: ${(await seedOData(databaseUrl, ENTRIES)).toFixed(0)} s`);
  const service = await startService(
    {
      DATABASE_URL: databaseUrl,
      PORT: String(PORT),
      LOG_LEVEL: 'warn',
      RATE_LIMIT_READ: 'off',
      OVERLOAD_MAX_EVENT_LOOP_DELAY: 'off',
      // The galaxy's layout thread would read and embed every entry meanwhile, and count in the RSS.
      GALAXY: 'off',
    },
    '/readyz',
  );
  // However the run ends, the service goes with it.
  process.once('exit', () => service.child.kill('SIGTERM'));
  const base = `http://127.0.0.1:${PORT}`;
  await fetch(`${base}/odata/v2/$metadata`);
  await sleep(1000);
  const idle = mb(service.pid, 'VmRSS');
  const idlePeak = mb(service.pid, 'VmHWM');
  const idleAnon = mb(service.pid, 'RssAnon');
  const idleFile = mb(service.pid, 'RssFile');

  const whole: string[] = [];
  for (const [label, url, marker] of [
    ['Atom, all=true', `${base}/odata/v2/nonsense_list?all=true`, '</entry>'],
    ['JSON, all=true', `${base}/odata/v2/nonsense_list?all=true&$format=json`, '"__metadata"'],
    ['Atom, all=true, $filter=multiline', `${base}/odata/v2/nonsense_list?all=true&$filter=multiline`, '</entry>'],
  ] as const) {
    const stop = sampleMemory(service.pid);
    const health = probeHealth(base);
    const result = await readAll(url, marker);
    const sampled = stop();
    const latency = await health();
    const peak = mb(service.pid, 'VmHWM');
    whole.push(
      `| ${label} | ${result.entries} | ${result.seconds.toFixed(1)} s | ${(result.bytes / 1e6).toFixed(0)} MB | ` +
        `${(result.entries / result.seconds).toFixed(0)} entries/s | ${(peak - idle).toFixed(0)} MB | ` +
        `${(sampled.anon - idleAnon).toFixed(0)} MB | ${(sampled.file - idleFile).toFixed(0)} MB | ` +
        `${latency.p50.toFixed(0)} / ${latency.p95.toFixed(0)} / ${latency.max.toFixed(0)} ms |`,
    );
  }
  const peakAbove = mb(service.pid, 'VmHWM') - idle;

  const middle = FIRST_TIMESTAMP + Math.floor(ENTRIES / 2);
  const pages: string[] = [];
  for (const [label, requestPath] of SECONDS <= 0 ? [] : [
    ["Atom, $filter=substringof('sock',nonsense)", "/odata/v2/nonsense_list?$filter=substringof('sock',nonsense)"],
    [`Atom, $filter=timestamp ge ${middle}, $inlinecount=allpages`, `/odata/v2/nonsense_list?$filter=timestamp ge ${middle}&$inlinecount=allpages`],
    ["JSON, $filter=startswith(nonsense,'Entry 9') and not multiline", "/odata/v2/nonsense_list?$filter=startswith(nonsense,'Entry 9') and not multiline&$format=json"],
  ] as const) {
    pages.push(`| ${label} | ${await rps(base, encodeURI(requestPath).replace(/'/g, '%27'))} |`);
  }
  await service.stop();

  console.log(`\n${ENTRIES} entries on ${ENGINE}, ${os.cpus().length} cores, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  console.log(
    `serving process: ${idle.toFixed(0)} MB RSS idle (${idleAnon.toFixed(0)} MB anonymous, ${idleFile.toFixed(0)} MB file-backed; peak at start ${idlePeak.toFixed(0)} MB)\n`,
  );
  console.log(
    '| whole feed | entries | time | size | rate | peak RSS (VmHWM) above idle | of it: anonymous, max above idle | file-backed (mapped database), max above idle | /healthz meanwhile p50 / p95 / max |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const row of whole) console.log(row);
  console.log(`\npeak RSS above idle: ${peakAbove.toFixed(0)} MB (target under ${RSS_TARGET_MB} MB): ${peakAbove < RSS_TARGET_MB ? 'met' : 'MISSED'}`);
  if (pages.length > 0) {
    console.log(`\n| page of 100, 10 connections, ${SECONDS} s | requests/s |`);
    console.log('|---|---|');
    for (const row of pages) console.log(row);
  }
  if (peakAbove >= RSS_TARGET_MB) process.exitCode = 1;
} finally {
  if (admin) {
    await admin.query(`drop database if exists ${pgName} with (force)`);
    await admin.end();
  }
  fs.rmSync(dir, { recursive: true, force: true });
}
