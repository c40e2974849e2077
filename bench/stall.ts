/**
 * How long a health check waits while the service does legal but heavy work: the latency of
 * `/healthz`, probed every 20 ms, while idle and during each case on 300,000 entries:
 *   1. four full CSV exports read at full speed,
 *   2. one OData `all=true` feed,
 *   3. four searches of the site (`/search`) for a term every entry has, one after another,
 *   4. 40 new share cards rendered 8 at a time,
 *   5. hostile OData, each family sent by four clients in a loop for BENCH_HOSTILE_SECONDS (10):
 *      a feed whose cheap, indexed OR-branch fills the first page and whose expensive rest (five
 *      `substringof` over nested `concat`) makes every later page scan; 25 `substringof`; a whole feed
 *      ordered by text. Their answers (200, 400 past a time limit, 429 past a budget) are counted.
 * Bounds: p95 ≤ 60 ms and max ≤ 300 ms for cases 1-4; p95 ≤ 20 ms and max ≤ 100 ms for the hostile
 * OData families, whose work never runs on the event loop.
 *
 *   npm run bench:stall                 # BENCH_ENTRIES=300000 by default
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '../src/config.ts';
import { migrate, openDatabase } from '../src/db/database.ts';
import { createStorage } from '../src/storage/index.ts';
import { startService } from './lib.ts';

const ENTRIES = Number(process.env.BENCH_ENTRIES ?? 300_000);
const HOSTILE_SECONDS = Number(process.env.BENCH_HOSTILE_SECONDS ?? 10);
const PORT = Number(process.env.BENCH_PORT ?? 18191);
const base = `http://127.0.0.1:${PORT}`;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nonsense-stall-'));
const dbFile = path.join(dir, 'stall.db');

async function seed(): Promise<string[]> {
  const database = await openDatabase(loadConfig({ DATABASE_URL: dbFile }).database);
  await migrate(database);
  const storage = createStorage(database);
  await storage.variables.insertMissing([{ name: '$ANIMAL$', description: 'An animal.', values: ['goose', 'capybara', 'newt'] }]);
  const uuids: string[] = [];
  for (let start = 0; start < ENTRIES; start += 10_000) {
    const entries = Array.from({ length: Math.min(10_000, ENTRIES - start) }, (_, i) => {
      const n = start + i;
      const uuid = randomUUID();
      uuids.push(uuid);
      return { uuid, text: `Entry ${n}: the $ANIMAL$ wrote ${n % 7} letters to the moon about socks.`, timestamp: 1_600_000_000 + n };
    });
    await storage.entries.insertEntries(entries);
  }
  await database.close();
  return uuids;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });

/** get reads a whole answer at full speed and returns its size. */
function get(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http.get(url, { agent }, (res) => {
      let bytes = 0;
      res.on('data', (chunk: Buffer) => (bytes += chunk.length));
      res.on('end', () => (res.statusCode === 200 ? resolve(bytes) : reject(new Error(`${url}: ${res.statusCode}`))));
      res.on('error', reject);
    }).on('error', reject);
  });
}

/**
 * hammer sends `url` from `clients` loops until `seconds` have passed, reading each answer whatever
 * its status (a feed aborted past a page's time limit counts as "aborted"), and counts the outcomes.
 * A feed still streaming when the time is up is closed ("cut at the end"): a whole feed in an
 * expression order can take minutes.
 */
async function hammer(url: string, clients: number, seconds: number): Promise<Map<string, number>> {
  const outcomes = new Map<string, number>();
  const count = (outcome: string) => outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
  const until = performance.now() + seconds * 1000;
  const one = () =>
    new Promise<void>((resolve) => {
      let settled = false;
      const settle = (outcome: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(cut);
        count(outcome);
        resolve();
      };
      const request = http
        .get(url, { agent }, (res) => {
          res.on('data', () => {});
          res.on('end', () => settle(String(res.statusCode)));
          res.on('error', () => settle('aborted'));
          res.on('aborted', () => settle('aborted'));
        })
        .on('error', () => settle('aborted'));
      const cut = setTimeout(() => {
        settle('cut at the end');
        request.destroy();
      }, Math.max(0, until - performance.now()));
    });
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < until) await one();
    }),
  );
  return outcomes;
}

/** probe measures /healthz every 20 ms (on its own connection) until `work` settles. */
async function probe(work: Promise<unknown>): Promise<{ ms: number[]; seconds: number }> {
  const probeAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const started = performance.now();
  let done = false;
  const finished = work.finally(() => (done = true));
  const ms: number[] = [];
  while (!done) {
    const t0 = performance.now();
    await new Promise<void>((resolve, reject) => {
      http.get(`${base}/healthz`, { agent: probeAgent }, (res) => res.resume().on('end', resolve)).on('error', reject);
    });
    ms.push(performance.now() - t0);
    await sleep(20);
  }
  await finished;
  probeAgent.destroy();
  return { ms, seconds: (performance.now() - started) / 1000 };
}

const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;

const seedStarted = Date.now();
const uuids = await seed();
console.log(`seeded ${ENTRIES} entries in ${((Date.now() - seedStarted) / 1000).toFixed(1)} s`);
const service = await startService({
  DATABASE_URL: dbFile, PORT: String(PORT), LOG_LEVEL: 'warn', RATE_LIMIT_READ: 'off', RATE_LIMIT_IMAGE: 'off', OVERLOAD_MAX_EVENT_LOOP_DELAY: 'off',
});
const odata = (query: string) => `${base}/odata/v2/nonsense_list?${query.replace(/ /g, '%20').replace(/'/g, '%27')}`;
const nested = 'concat(concat(original_nonsense,nonsense),concat(nonsense,original_nonsense))';
const expensive = ['zq', 'xv', 'jk', 'qz', 'vx'].map((word) => `substringof('${word}',${nested})`).join(' or ');
const HOSTILE: [string, string][] = [
  ['hostile OData: cheap first page, expensive rest', odata(`all=true&$filter=timestamp lt ${1_600_000_000 + 1000} or ${expensive}`)],
  ['hostile OData: 25 substringof', odata(`all=true&$filter=${Array.from({ length: 25 }, (_, i) => `substringof('${String.fromCharCode(97 + i)}',nonsense)`).join(' and ')}`)],
  ['hostile OData: all=true ordered by text', odata('all=true&$orderby=nonsense')],
];
const outcomes: string[] = [];
const rows: string[] = [];
try {
  await get(`${base}/api/v1/nonsense/${uuids[0]}.png`); // fonts loaded once, as after any start
  const cases: [string, () => Promise<unknown>][] = [
    ['idle (baseline)', () => sleep(2000)],
    ['4 full CSV exports at full speed', () => Promise.all([1, 2, 3, 4].map(() => get(`${base}/api/v1/nonsense?format=csv`)))],
    ['1 OData all=true feed', () => get(`${base}/odata/v2/nonsense_list?all=true`)],
    [
      '4 searches of a term every entry has, one after another',
      async () => {
        for (let i = 0; i < 4; i++) await get(`${base}/search?q=socks`);
      },
    ],
    [
      '40 new share cards, 8 at a time',
      async () => {
        const fresh = uuids.slice(1, 41);
        for (let i = 0; i < fresh.length; i += 8) await Promise.all(fresh.slice(i, i + 8).map((u) => get(`${base}/api/v1/nonsense/${u}.png`)));
      },
    ],
    ...HOSTILE.map(([name, url]): [string, () => Promise<unknown>] => [
      name,
      async () => {
        const seen = await hammer(url, 4, HOSTILE_SECONDS);
        outcomes.push(`${name}: ${[...seen].map(([outcome, n]) => `${n} × ${outcome}`).join(', ')}`);
      },
    ]),
  ];
  for (const [name, work] of cases) {
    const { ms, seconds } = await probe(work());
    const p50 = quantile(ms, 0.5);
    const p95 = quantile(ms, 0.95);
    const max = Math.max(...ms);
    const [p95Bound, maxBound] = name.startsWith('hostile') ? [20, 100] : [60, 300];
    const verdict = name.startsWith('idle') ? '' : p95 <= p95Bound && max <= maxBound ? 'yes' : 'NO';
    rows.push(`| ${name} | ${seconds.toFixed(1)} s | ${ms.length} | ${p50.toFixed(1)} | ${p95.toFixed(1)} | ${max.toFixed(1)} | ≤ ${p95Bound} / ≤ ${maxBound} | ${verdict} |`);
    console.log(rows.at(-1));
  }
} finally {
  await service.stop();
  agent.destroy();
  fs.rmSync(dir, { recursive: true, force: true });
}
console.log(`\n/healthz latency (ms), probed every 20 ms, ${ENTRIES} entries, ${os.availableParallelism()} cores`);
console.log('| while | took | probes | p50 | p95 | max | bound p95 / max | within |');
console.log('|---|---|---|---|---|---|---|---|');
for (const row of rows) console.log(row);
console.log('\nAnswers to the hostile OData requests (4 clients, one address):');
for (const line of outcomes) console.log(`- ${line}`);
