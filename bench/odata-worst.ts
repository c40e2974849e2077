/**
 * The heaviest OData requests the service accepts, on a large database (1,000,000 entries by
 * default): for each, the status, the time to the last byte, and the longest `/healthz` answer while
 * it ran (probed every 10 ms on its own connection). The target: every accepted request answers
 * within 1 s, or is refused; `/healthz` never waits long behind one.
 *
 *   npm run bench:odata-worst
 *   ODATA_BENCH_DATABASE=postgres npm run bench:odata-worst           # on the server of TEST_POSTGRES_URL
 *   ODATA_BENCH_DATABASE_URL=/tmp/big.db npm run bench:odata-worst   # reuse a database seeded before (bench/odata-seed.ts)
 *
 * The service runs as its own process (`nonsense serve`), rate limits, overload refusals and the
 * galaxy's layout thread off.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { FIRST_TIMESTAMP, seedOData } from './odata-seed.ts';
import { startService } from './lib.ts';

const ENTRIES = Number(process.env.ODATA_BENCH_ENTRIES ?? 1_000_000);
const PORT = Number(process.env.ODATA_BENCH_PORT ?? 18431);
const ENGINE = process.env.ODATA_BENCH_DATABASE === 'postgres' ? 'postgres' : 'sqlite';
const PG_SERVER = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const GIVEN = process.env.ODATA_BENCH_DATABASE_URL;
const ONLY = process.env.ODATA_BENCH_ONLY; // a substring of the case names to run
const TIMEOUT_MS = 60_000;
const base = `http://127.0.0.1:${PORT}`;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nonsense-odata-worst-'));
const pgName = `nonsense_odata_worst_${Date.now()}`;
const databaseUrl = GIVEN ?? (ENGINE === 'postgres' ? Object.assign(new URL(PG_SERVER), { pathname: `/${pgName}` }).href : path.join(dir, 'odata.db'));

const repeat = (n: number, item: (i: number) => string, joiner: string) => Array.from({ length: n }, (_, i) => item(i)).join(joiner);
// 99 nodes: 25 substring tests that never match, so every row is tested with each.
const SUBSTRINGS = repeat(25, (i) => `substringof('zq${i}',nonsense)`, ' or ');
// 99 nodes: each tests the text for the known variables, then lower-cases and searches it.
const ORIGINALS = repeat(20, (i) => `substringof('zq${i}',tolower(original_nonsense))`, ' or ');
// 63 concats doubling the text to 32 copies (about 2 KB a row), searched three times.
const wide = (depth: number): string => (depth === 0 ? 'nonsense' : `concat(${wide(depth - 1)},${wide(depth - 1)})`);
const CONCATS = `indexof(${wide(5)},'zq') eq 7`;
const ENDSWITH = repeat(12, (i) => `endswith(concat(tolower(nonsense),toupper(nonsense)),'zq${i}')`, ' or ');
const MIDDLE = FIRST_TIMESTAMP + Math.floor(ENTRIES / 2);

const cases: [string, string][] = [
  ['page, no options', '/odata/v2/nonsense_list'],
  ['page, 25 substringof (99 nodes), no match', `/odata/v2/nonsense_list?$filter=${SUBSTRINGS}`],
  ['page, 20 substringof(tolower(original_nonsense)) (99 nodes)', `/odata/v2/nonsense_list?$filter=${ORIGINALS}`],
  ['page, 63 concats to 2 KB a row, indexof', `/odata/v2/nonsense_list?$filter=${CONCATS}`],
  ['page, 12 endswith of concat, no match', `/odata/v2/nonsense_list?$filter=${ENDSWITH}`],
  ['page, $filter=timestamp ge middle, $inlinecount', `/odata/v2/nonsense_list?$filter=timestamp ge ${MIDDLE}&$inlinecount=allpages`],
  ['page, 25 substringof, $inlinecount', `/odata/v2/nonsense_list?$filter=${SUBSTRINGS}&$inlinecount=allpages`],
  ['$count, 25 substringof', `/odata/v2/nonsense_list/$count?$filter=${SUBSTRINGS}`],
  ['page, $orderby=nonsense', '/odata/v2/nonsense_list?$orderby=nonsense'],
  ['page, $orderby=tolower(nonsense) desc', '/odata/v2/nonsense_list?$orderby=tolower(nonsense) desc'],
  ['page, $orderby 8 expression keys', `/odata/v2/nonsense_list?$orderby=${repeat(8, (i) => (i % 2 ? `length(concat(nonsense,'${i}')) desc` : `substring(original_nonsense,${i})`), ',')}`],
  ['page, $skip=999900', `/odata/v2/nonsense_list?$skip=${ENTRIES - 100}`],
  ['page, $skip=999900, $orderby=nonsense desc', `/odata/v2/nonsense_list?$skip=${ENTRIES - 100}&$orderby=nonsense desc`],
  ['page, $skip=2147483647', '/odata/v2/nonsense_list?$skip=2147483647'],
  ['page, $top=2147483647', '/odata/v2/nonsense_list?$top=2147483647'],
  ['all=true, 25 substringof, no match', `/odata/v2/nonsense_list?all=true&$filter=${SUBSTRINGS}`],
  ['all=true, $orderby=nonsense, $top=2000', '/odata/v2/nonsense_list?all=true&$orderby=nonsense&$top=2000'],
  ['all=true, $orderby=nonsense', '/odata/v2/nonsense_list?all=true&$orderby=nonsense'],
];

const encode = (url: string) => encodeURI(url).replace(/'/g, '%27').replace(/,/g, '%2C');

/** run reads one answer to the end (or gives up after TIMEOUT_MS) while probing /healthz. */
async function run(url: string): Promise<{ status: number | string; seconds: number; bytes: number; healthMax: number; probes: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let done = false;
  const started = performance.now();
  const work = new Promise<{ status: number | string; bytes: number }>((resolve) => {
    const request = http.get(base + encode(url), (res) => {
      let bytes = 0;
      res.on('data', (chunk: Buffer) => (bytes += chunk.length));
      res.on('end', () => resolve({ status: res.statusCode!, bytes }));
      res.on('error', () => resolve({ status: `${res.statusCode} aborted`, bytes }));
    });
    const timer = setTimeout(() => {
      request.destroy();
      resolve({ status: `gave up after ${TIMEOUT_MS / 1000} s`, bytes: 0 });
    }, TIMEOUT_MS);
    request.on('close', () => clearTimeout(timer));
    request.on('error', () => {});
  }).finally(() => (done = true));
  let healthMax = 0;
  let probes = 0;
  while (!done) {
    const t0 = performance.now();
    await new Promise<void>((resolve) => http.get(`${base}/healthz`, { agent }, (res) => res.resume().on('end', resolve)).on('error', () => resolve()));
    healthMax = Math.max(healthMax, performance.now() - t0);
    probes++;
    await sleep(10);
  }
  const { status, bytes } = await work;
  agent.destroy();
  return { status, seconds: (performance.now() - started) / 1000, bytes, healthMax, probes };
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
    { DATABASE_URL: databaseUrl, PORT: String(PORT), LOG_LEVEL: 'warn', RATE_LIMIT_READ: 'off', OVERLOAD_MAX_EVENT_LOOP_DELAY: 'off', GALAXY: 'off' },
    '/readyz',
  );
  process.once('exit', () => service.child.kill('SIGTERM'));
  const rows: string[] = [];
  try {
    await run('/odata/v2/nonsense_list?$top=1'); // warm: variables, statements, caches
    for (const [name, url] of cases) {
      if (ONLY && !name.includes(ONLY)) continue;
      const r = await run(url);
      rows.push(`| ${name} | ${r.status} | ${r.seconds.toFixed(2)} s | ${(r.bytes / 1e3).toFixed(0)} kB | ${r.healthMax.toFixed(0)} ms (${r.probes}) |`);
      console.log(rows.at(-1));
    }
  } finally {
    await service.stop();
  }
  console.log(`\n${ENTRIES} entries on ${ENGINE}, ${os.availableParallelism()} cores, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  console.log('| request | status | time to last byte | size | longest /healthz meanwhile (probes) |');
  console.log('|---|---|---|---|---|');
  for (const row of rows) console.log(row);
} finally {
  if (admin) {
    await admin.query(`drop database if exists ${pgName} with (force)`);
    await admin.end();
  }
  fs.rmSync(dir, { recursive: true, force: true });
}
