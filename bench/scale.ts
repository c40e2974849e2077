/**
 * The service at scale: for each size and engine, every figure of "graceful at ten million entries"
 * beside its bound. Databases of realistic generated entries (bench/scale-data.ts) are made once and
 * kept in `.tmp/scale/` (SQLite) or as `nonsense_scale_<size>` (PostgreSQL); the service runs as
 * `npm start` runs it, with the default configuration, except that rate limits are off and addresses
 * come from X-Forwarded-For (so that the concurrent searches are five clients, not one). Ratios are
 * against a bare node:http server answering the same body, measured in the same minute.
 *
 *   npm run bench:scale                                   # SQLite 1M, 5M, 10M; PostgreSQL 1M, 5M
 *   ENGINES=sqlite SCALE_SIZES=1e6 npm run bench:scale
 *   SCALE_SECONDS=10 IMPORT_SAMPLE=50000 npm run bench:scale
 *   SCALE_ONLY=import ENGINES=sqlite SCALE_SIZES=1e6 npm run bench:scale   # only the import's figure
 *   SCALE_ONLY=service npm run bench:scale                                  # every figure but the import's
 *   SCALE_ONLY=galaxy ENGINES=sqlite SCALE_SIZES=10e6 npm run bench:scale   # a full galaxy layout (half an hour at 10M)
 *
 * The galaxy's layout is measured only when asked for (SCALE_ONLY=galaxy): it takes minutes a
 * million entries. It stores the layout in the kept database, so that later runs serve it; until one
 * has run, the service lays the galaxy out in the background while it is measured (a first start on
 * a large database), and its figures include the layout's threads. SCALE_GALAXY=off measures the
 * service as it runs once the layout is stored (GALAXY=off: no layout thread).
 */
import { execFileSync, fork, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { galaxyThreadsFor, loadConfig } from '../src/config.ts';
import { migrate, openDatabase } from '../src/db/database.ts';
import { importFile } from '../src/import/import-file.ts';
import { createStorage } from '../src/storage/index.ts';
import type { ProbeResult } from './latency-probe.ts';
import { WORKER_MAX_HEAP_MB } from '../src/services/galaxy/background.ts';
import { loadRound, memory, runCommand, startService, type Service } from './lib.ts';
import { COMMON_WORD, COMMON_WORDS, importSample, RARE_WORD, SCALE_DIR, SCALE_SERVER, scaleDatabase, scaleTimestamp, type ScaleDatabase, type ScaleEngine } from './scale-data.ts';

const ENGINES = (process.env.ENGINES ?? 'sqlite,postgres').split(',').map((e) => e.trim()) as ScaleEngine[];
const DEFAULT_SIZES: Record<ScaleEngine, string> = { sqlite: '1e6,5e6,10e6', postgres: '1e6,5e6' };
const SECONDS = Number(process.env.SCALE_SECONDS ?? 5);
const MIXED_SECONDS = Number(process.env.SCALE_MIXED_SECONDS ?? 30);
const IMPORT_SAMPLE = Number(process.env.IMPORT_SAMPLE ?? 20_000);
/** `import`: only the import's time per entry, without starting the service (minutes less a size); `galaxy`: only a full layout. */
const ONLY = process.env.SCALE_ONLY;
if (ONLY !== undefined && ONLY !== 'import' && ONLY !== 'service' && ONLY !== 'galaxy') throw new Error(`SCALE_ONLY=${ONLY}: only "import", "service" and "galaxy" are known`);
/** The galaxy's bound on a full layout at 10M entries, on two cores. */
const GALAXY_LAYOUT_BOUND_S = 75 * 60;
const CONNECTIONS = 20;
const SERVICE_PORT = '18501';
const BARE_PORT = '18502';

const sizesOf = (engine: ScaleEngine) => (process.env.SCALE_SIZES ?? DEFAULT_SIZES[engine]).split(',').map((s) => Math.round(Number(s)));
const ms = (t: number) => (t >= 1000 ? `${(t / 1000).toFixed(2)} s` : `${t.toFixed(t < 10 ? 1 : 0)} ms`);
const mib = (m: number) => `${m.toFixed(0)} MiB`;
const sleep = (t: number) => new Promise((resolve) => setTimeout(resolve, t));

/** One row of the table: what, the figure, the bound, and whether it holds (null: no bound, or not measured). */
interface Row {
  what: string;
  figure: string;
  bound: string;
  holds: boolean | null;
}

/** get times one request: to the first byte of the answer and to its end; `address` is sent as X-Forwarded-For. */
function get(url: string, options: { address?: string; method?: string; body?: string; token?: string } = {}): Promise<{ status: number; first: number; total: number; body: string }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const headers: Record<string, string> = {};
    if (options.address) headers['x-forwarded-for'] = options.address;
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (options.body) headers['content-type'] = 'application/json';
    const request = http.request(url, { method: options.method ?? 'GET', headers }, (response) => {
      const first = performance.now() - started;
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, first, total: performance.now() - started, body: Buffer.concat(chunks).toString('utf8') }));
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(options.body);
  });
}

/**
 * download reads an answer to its end, or until `stopAfter` lines (CSV rows, "\r\n") have come, and
 * says how long it took (to its first byte and to its end), how many lines and bytes it read; the
 * connection is dropped when it stops early.
 */
function download(url: string, stopAfter = Number.POSITIVE_INFINITY): Promise<{ seconds: number; first: number; lines: number; bytes: number; status: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const request = http.get(url, (response) => {
      let lines = 0;
      let bytes = 0;
      let first = -1;
      const done = () => resolve({ seconds: (performance.now() - started) / 1000, first: Math.max(0, first), lines, bytes, status: response.statusCode ?? 0 });
      response.on('data', (chunk: Buffer) => {
        if (first < 0) first = performance.now() - started;
        bytes += chunk.length;
        for (let at = chunk.indexOf(0x0a); at !== -1; at = chunk.indexOf(0x0a, at + 1)) lines++;
        if (lines >= stopAfter) {
          done();
          request.destroy();
        }
      });
      response.on('end', done);
      response.on('error', () => {});
    });
    request.on('error', (error) => (request.destroyed ? undefined : reject(error)));
  });
}

function startBare(body: string): Promise<ChildProcess> {
  const child = fork('bench/bare-server.ts', [], { env: { ...process.env, PORT: BARE_PORT, BARE_BODY: body }, stdio: ['ignore', 'ignore', 'inherit', 'ipc'], execArgv: ['--import', 'tsx'] });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('message', () => resolve(child));
  });
}

/** probe runs bench/latency-probe.ts against `base` for `seconds`, with `during` run meanwhile. */
async function probe(base: string, paths: string[], seconds: number, during: () => Promise<void>): Promise<ProbeResult> {
  const child = fork('bench/latency-probe.ts', [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const result = new Promise<ProbeResult>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the latency probe exited with ${code}`)));
    child.once('message', (answer) => {
      child.removeAllListeners('exit');
      resolve(answer as ProbeResult);
    });
  });
  child.send({ base, requests: paths.map((p) => ({ kind: p, path: p })), seconds, gapMs: 2 });
  await sleep(1000);
  await during();
  return result;
}

const maxOf = (result: ProbeResult) => Math.max(0, ...Object.values(result.latencies).map((l) => l[l.length - 1] ?? 0));

/** randomPicks reads the service's random picks by source from /metrics. */
async function randomPicks(base: string): Promise<{ cache: number; drawn_ahead: number; on_request: number }> {
  const body = (await get(`${base}/metrics`)).body;
  const count = (source: string) => Number(new RegExp(`^nonsense_random_picks_total\\{source="${source}"\\} (\\d+)$`, 'm').exec(body)?.[1] ?? 0);
  return { cache: count('cache'), drawn_ahead: count('drawn_ahead'), on_request: count('on_request') };
}

/** start runs the service on `db` and waits for the first 200 of random, timed from the spawn. */
async function start(db: ScaleDatabase): Promise<{ service: Service; firstMs: number }> {
  const started = performance.now();
  const galaxy: Record<string, string> = process.env.SCALE_GALAXY === undefined ? {} : { GALAXY: process.env.SCALE_GALAXY };
  const service = await startService({ DATABASE_URL: db.url, PORT: SERVICE_PORT, LOG_LEVEL: 'warn', RATE_LIMIT_READ: 'off', TRUST_PROXY: '127.0.0.1', ...galaxy });
  for (;;) {
    const res = await get(`${service.url}/api/v1/nonsense/random`);
    if (res.status === 200) return { service, firstMs: performance.now() - started };
    if (performance.now() - started > 600_000) throw new Error(`random still answers ${res.status} after 10 minutes`);
    await sleep(10);
  }
}

async function measureSize(db: ScaleDatabase): Promise<Row[]> {
  if (ONLY === 'galaxy') return [await measureLayout(db)];
  const rows = ONLY === 'import' ? [] : await measureService(db);
  if (ONLY !== 'service') rows.push(await measureImport(db));
  return rows;
}

/**
 * measureLayout: a full layout of the galaxy (`nonsense galaxy --refit`, the background thread's
 * heap limit, GALAXY_THREADS as set or else the server's default), its wall and CPU time and the
 * command's peak RSS. The layout stays stored in the database.
 */
async function measureLayout(db: ScaleDatabase): Promise<Row> {
  // The server's threads for a background layout (the command alone would take every core).
  const threads = process.env.GALAXY_THREADS ?? String(galaxyThreadsFor(os.availableParallelism()));
  const layout = await runCommand(['galaxy', '--refit'], { DATABASE_URL: db.url, GALAXY_THREADS: threads, NODE_OPTIONS: `--max-old-space-size=${WORKER_MAX_HEAP_MB}` });
  const bound = (GALAXY_LAYOUT_BOUND_S * db.size) / 10_000_000;
  return {
    what: `galaxy: a full layout (nonsense galaxy --refit) on ${threads} thread(s): wall / CPU / peak RSS`,
    figure: `${(layout.seconds / 60).toFixed(1)} min / ${(layout.cpu / 60).toFixed(1)} min / ${mib(layout.peakMiB)}`,
    bound: `≤ ${(bound / 60).toFixed(0)} min (75 min at 10M), memory not growing with the entries`,
    holds: layout.seconds <= bound,
  };
}

/** measureService: every figure of the running service on `db`. */
async function measureService(db: ScaleDatabase): Promise<Row[]> {
  const rows: Row[] = [];
  const row = (what: string, figure: string, bound: string, holds: boolean | null) => rows.push({ what, figure, bound, holds });
  const at = (share: number) => scaleTimestamp(Math.floor(db.size * share), db.size);

  const { service, firstMs } = await start(db);
  const base = service.url;
  let bare: ChildProcess | undefined;
  try {
    const afterStart = memory(service.pid).rss;
    row('start → first 200 (random)', ms(firstMs), '≤ 1 s', firstMs <= 1000);

    // Random and by-UUID against the bare server, interleaved in the same minute. The bare server gets
    // the same requests (it ignores the path): the same request lines to parse, and the same work for
    // the client, which shares the machine (as bench/run.ts does).
    bare = await startBare((await get(`${base}/api/v1/nonsense/random`)).body);
    const bareUrl = `http://127.0.0.1:${BARE_PORT}`;
    const round = (url: string, pid: number, path: string, paths?: string[], seconds = SECONDS) => loadRound(`${url}${path}`, pid, { connections: CONNECTIONS, seconds, paths });
    const uuidPaths = db.sample.map((u) => `/api/v1/nonsense/${u}`);
    const pair = async (path: string, paths?: string[]) => {
      // Warm-up: V8 optimises both request paths over the first seconds of load.
      await round(base, service.pid, path, paths, 2);
      await round(bareUrl, bare!.pid!, path, paths, 2);
      const before = await round(bareUrl, bare!.pid!, path, paths);
      const own = await round(base, service.pid, path, paths);
      const after = await round(bareUrl, bare!.pid!, path, paths);
      return { own, bareRps: (before.rps + after.rps) / 2 };
    };
    const picksBefore = await randomPicks(base);
    const random = await pair('/api/v1/nonsense/random');
    const picks = await randomPicks(base);
    const byUuid = await pair('', uuidPaths);
    bare.kill();
    bare = undefined;
    const randomRatio = random.own.rps / random.bareRps;
    const uuidRatio = byUuid.own.rps / byUuid.bareRps;
    row('random, of bare', `${randomRatio.toFixed(2)} (${random.own.rps.toFixed(0)} / ${random.bareRps.toFixed(0)} req/s)`, '≥ 0.6', randomRatio >= 0.6);
    const served = (source: keyof typeof picks) => picks[source] - picksBefore[source];
    const pickCount = served('cache') + served('drawn_ahead') + served('on_request');
    const share = (source: keyof typeof picks) => `${((100 * served(source)) / Math.max(1, pickCount)).toFixed(1)} %`;
    row('random picks: cache / drawn ahead / on request', `${share('cache')} / ${share('drawn_ahead')} / ${share('on_request')}`, '', null);
    row('by UUID, of bare', `${uuidRatio.toFixed(2)} (${byUuid.own.rps.toFixed(0)} / ${byUuid.bareRps.toFixed(0)} req/s)`, '≥ 0.5', uuidRatio >= 0.5);

    // One admin write (hide, then show again) while a probe reads one request at a time.
    const target = db.sample[Math.floor(db.sample.length / 2)]!;
    const write = async (state: 'hidden' | 'visible') => {
      const res = await get(`${base}/api/v1/admin/nonsense/${target}`, { method: 'PATCH', token: db.token, body: JSON.stringify({ state }) });
      if (res.status !== 200) throw new Error(`the admin write was answered ${res.status}: ${res.body.slice(0, 200)}`);
    };
    const probePaths = ['/api/v1/nonsense/random', '/healthz', `/api/v1/nonsense/${db.sample[1]}`];
    const quiet = await probe(base, probePaths, 3, async () => {});
    const during = await probe(base, probePaths, 4, async () => {
      await write('hidden');
      await sleep(1500);
      await write('visible');
    });
    // Each kind's longest too: a random request may wait for the new revision's first batch, where
    // /healthz waits only for the event loop.
    const kinds = ['random', 'healthz', 'by UUID'].map((kind, i) => `${kind} ${ms(during.latencies[probePaths[i]!]?.at(-1) ?? 0)}`).join(', ');
    row('one admin write: longest answer of a probe meanwhile', `${ms(maxOf(during))}: ${kinds} (without writes: ${ms(maxOf(quiet))})`, '≤ 20 ms', maxOf(during) <= 20);

    // Status: the first call after a change.
    await write('hidden');
    const status1 = (await get(`${base}/api/v1/nonsense/status`)).total;
    await write('visible');
    const status2 = (await get(`${base}/api/v1/nonsense/status`)).total;
    const status = Math.max(status1, status2);
    row('status, first call after a change', `${ms(status1)}, ${ms(status2)}`, '≤ 20 ms', status <= 20);

    // The site's search page, to its first byte.
    const search = (word: string, address: string) => get(`${base}/search?q=${encodeURIComponent(word)}`, { address });
    const common = await search(COMMON_WORD, '10.0.0.1');
    const rare = await search(RARE_WORD, '10.0.0.2');
    row('search page, first byte: common word / rare word', `${ms(common.first)} / ${ms(rare.first)}`, '≤ 300 ms', Math.max(common.first, rare.first) <= 300);
    const four = COMMON_WORDS.map((word, i) => search(word, `10.0.1.${i + 1}`));
    await sleep(50);
    const rareMeanwhile = await search(RARE_WORD, '10.0.2.1');
    const fourFirst = (await Promise.all(four)).map((r) => r.first);
    row(
      'search page, four common words at once; a rare one meanwhile',
      `${fourFirst.map(ms).join(', ')}; rare ${ms(rareMeanwhile.first)}`,
      '≤ 300 ms',
      Math.max(...fourFirst, rareMeanwhile.first) <= 300,
    );

    // Exports.
    const csv = `${base}/api/v1/nonsense?format=csv`;
    const full = await download(csv);
    const tenth = await download(`${csv}&after=${at(0.45)}&before=${at(0.55)}`);
    const sameRows = await download(csv, tenth.lines);
    const tenthRatio = tenth.seconds / sameRows.seconds;
    row(
      'export with after/before covering 10 %, of unfiltered same rows',
      `${tenthRatio.toFixed(2)} (${tenth.seconds.toFixed(2)} s / ${sameRows.seconds.toFixed(2)} s, ${(tenth.lines - 1).toLocaleString('en')} rows)`,
      '≤ 2',
      tenthRatio <= 2,
    );
    const almostAll = await download(`${csv}&after=${at(0.01)}`);
    const almostRatio = almostAll.seconds / full.seconds;
    row('export with after covering 99 %, of the full export', `${almostRatio.toFixed(2)} (${almostAll.seconds.toFixed(1)} s / ${full.seconds.toFixed(1)} s)`, '≤ 2', almostRatio <= 2);
    const sqlite3 = db.engine === 'sqlite' ? spawnSync('sqlite3', ['-version']).status === 0 : false;
    if (sqlite3) {
      const started = performance.now();
      execFileSync('sqlite3', ['-csv', db.url, "select uuid, text, '', created_at from entries where state = 'visible' order by created_at, uuid"], { stdio: ['ignore', 'ignore', 'inherit'] });
      const own = (performance.now() - started) / 1000;
      row('full CSV export: sqlite3 -csv time / export time', `${(own / full.seconds).toFixed(2)} (${own.toFixed(1)} s / ${full.seconds.toFixed(1)} s)`, 'none (issue: 0.36 at 1M)', null);
    } else {
      row('full CSV export: sqlite3 -csv time / export time', db.engine === 'sqlite' ? 'skipped: no sqlite3 binary' : `skipped on PostgreSQL (export ${full.seconds.toFixed(1)} s)`, 'none', null);
    }

    // The galaxy, answered from its stored layout (none before a first layout: then 503 or an empty one).
    const galaxyCsv = await download(`${base}/api/v1/nonsense/galaxy`);
    const galaxyJson = await download(`${base}/api/v1/nonsense/galaxy?format=json`);
    const galaxyFirst = Math.max(galaxyCsv.first, galaxyJson.first);
    row(
      'galaxy CSV / JSON, first byte (status, size, whole answer)',
      `${ms(galaxyCsv.first)} (${galaxyCsv.status}, ${(galaxyCsv.bytes / 1e6).toFixed(0)} MB, ${galaxyCsv.seconds.toFixed(1)} s) / ${ms(galaxyJson.first)} (${galaxyJson.status}, ${(galaxyJson.bytes / 1e6).toFixed(0)} MB, ${galaxyJson.seconds.toFixed(1)} s)`,
      '< 1 s, from the stored layout',
      galaxyCsv.status === 200 && galaxyJson.status === 200 && galaxyFirst < 1000,
    );

    // OData.
    const odata = `${base}/odata/v2/nonsense_list?$format=json`;
    const skip = await get(`${odata}&$skip=${db.size - 200}&$top=100`, { address: '10.0.3.1' });
    row('OData $skip near the end', `${ms(skip.total)} (${skip.status})`, '≤ 800 ms, answered', skip.status === 200 && skip.total <= 800);
    const odataRange = await download(`${odata}&all=true&$filter=${encodeURIComponent(`timestamp gt ${at(0.45)} and timestamp lt ${at(0.55)}`)}`);
    const odataSame = await download(`${odata}&all=true&$top=${tenth.lines - 1}`);
    const odataRatio = odataRange.seconds / odataSame.seconds;
    row(
      'OData all=true with a timestamp range of 10 %, of $top same rows',
      `${odataRatio.toFixed(2)} (${odataRange.seconds.toFixed(2)} s / ${odataSame.seconds.toFixed(2)} s)`,
      '≤ 2',
      odataRange.status === 200 && odataRatio <= 2,
    );

    // Thirty seconds of mixed reads, then the memory.
    const mixed = [
      ...Array.from({ length: 6 }, () => '/api/v1/nonsense/random'),
      ...db.sample.slice(0, 6).map((u) => `/api/v1/nonsense/${u}`),
      '/api/v1/nonsense/status',
      `/odata/v2/nonsense_list?$format=json&$top=20&$skip=${Math.floor(db.size / 2)}`,
      `/odata/v2/nonsense_list?$format=json&$filter=${encodeURIComponent(`timestamp gt ${at(0.5)}`)}&$top=50`,
      `/search?q=${RARE_WORD}`,
      `/api/v1/nonsense?format=json&after=${at(0.5)}&before=${at(0.5) + 86_400}`,
    ];
    const load = await loadRound(base, service.pid, { connections: 10, seconds: MIXED_SECONDS, paths: mixed });
    const afterMixed = memory(service.pid).rss;
    const peak = memory(service.pid).peak;
    // The galaxy's threads add to the figure while they lay out every entry (a database without a stored layout).
    // A first layout is a passing peak, like a start or a cache refresh: the steady bound is for the
    // service once the layout is stored (docs/decisions.md, "The galaxy").
    const laying = process.env.SCALE_GALAXY !== 'off' && galaxyCsv.status === 503;
    const galaxyState = process.env.SCALE_GALAXY === 'off' ? 'GALAXY=off' : laying ? 'a first layout running' : 'the layout stored';
    row(
      `RSS after start / after ${MIXED_SECONDS} s of mixed reads / peak (${galaxyState})`,
      `${mib(afterStart)} / ${mib(afterMixed)} / ${mib(peak)} (${load.rps.toFixed(0)} req/s, ${load.errors} refused or failed)`,
      laying ? 'steady ≤ 300 MiB once the layout is stored; ≤ 300 + 100 while it is laid out' : 'steady ≤ 300 MiB, peak ≤ steady + 100',
      laying ? afterMixed <= 400 && peak <= 400 : afterMixed <= 300 && peak <= Math.max(afterStart, afterMixed) + 100,
    );
  } finally {
    bare?.kill();
    await service.stop();
  }
  return rows;
}

/** measureImport: the import's time per entry into an empty database and into a copy of `db`. */
async function measureImport(db: ScaleDatabase): Promise<Row> {
  const sample = importSample(IMPORT_SAMPLE);
  // Empty, full, empty again: the mean of the two empty ones, so that warming up counts on neither side.
  const empty1 = await importTime(db.engine, null, sample);
  const full = await importTime(db.engine, db, sample);
  const empty2 = await importTime(db.engine, null, sample);
  const empty = (empty1 + empty2) / 2;
  return {
    what: `import of ${IMPORT_SAMPLE.toLocaleString('en')} entries, per entry: empty database / this one`,
    figure: `${empty.toFixed(0)} µs (${empty1.toFixed(0)}, ${empty2.toFixed(0)}) / ${full.toFixed(0)} µs (${(full / empty).toFixed(2)})`,
    bound: '≤ 1.2',
    holds: full / empty <= 1.2,
  };
}

/** importTime imports `file` into a new database (empty, or a copy of `db`) and says how many µs an entry took. */
async function importTime(engine: ScaleEngine, db: ScaleDatabase | null, file: string): Promise<number> {
  let url: string;
  let drop: () => Promise<void>;
  const name = `nonsense_scale_import_${process.pid}`;
  if (engine === 'sqlite') {
    url = path.join(SCALE_DIR, `import-${process.pid}.db`);
    for (const suffix of ['', '-wal', '-shm']) fs.rmSync(`${url}${suffix}`, { force: true });
    if (db) fs.copyFileSync(db.url, url);
    drop = async () => {
      for (const suffix of ['', '-wal', '-shm']) fs.rmSync(`${url}${suffix}`, { force: true });
    };
  } else {
    const admin = new pg.Client({ connectionString: SCALE_SERVER });
    await admin.connect();
    await admin.query(`drop database if exists ${name}`);
    await admin.query(db ? `create database ${name} template nonsense_scale_${db.size}` : `create database ${name}`);
    await admin.end();
    url = Object.assign(new URL(SCALE_SERVER), { pathname: `/${name}` }).href;
    drop = async () => {
      const again = new pg.Client({ connectionString: SCALE_SERVER });
      await again.connect();
      await again.query(`drop database if exists ${name} with (force)`);
      await again.end();
    };
  }
  try {
    const database = await openDatabase(loadConfig({ DATABASE_URL: url }).database);
    try {
      await migrate(database);
      const storage = createStorage(database);
      const started = performance.now();
      const result = await importFile(storage, file);
      if (result.added !== IMPORT_SAMPLE) throw new Error(`the import added ${result.added} of ${IMPORT_SAMPLE}`);
      return ((performance.now() - started) * 1000) / IMPORT_SAMPLE;
    } finally {
      await database.close();
    }
  } finally {
    await drop();
  }
}

const load = os.loadavg()[0]!;
console.log(`${os.cpus().length} cores, load average ${load.toFixed(1)} at the start${load > os.cpus().length ? ' (the machine is busy with other work: figures are noisy)' : ''}`);
for (const engine of ENGINES) {
  for (const size of sizesOf(engine)) {
    const started = performance.now();
    const db = await scaleDatabase(engine, size, (line) => console.log(line));
    console.log(`\n## ${engine === 'sqlite' ? 'SQLite' : 'PostgreSQL'}, ${size.toLocaleString('en')} entries (${db.seconds === null ? 'kept from an earlier run' : `generated in ${db.seconds.toFixed(0)} s`})`);
    const rows = await measureSize(db);
    console.log('\n| | figure | bound | holds |\n|---|---|---|---|');
    for (const r of rows) console.log(`| ${r.what} | ${r.figure} | ${r.bound} | ${r.holds === null ? '—' : r.holds ? 'yes' : '**no**'} |`);
    console.log(`\n(measured in ${((performance.now() - started) / 1000).toFixed(0)} s; load average now ${os.loadavg()[0]!.toFixed(1)})`);
  }
}
