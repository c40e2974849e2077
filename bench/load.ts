/**
 * Load test: a realistic mix of requests against a real server for 60 s (by default), each request
 * type at its share of a fixed total rate, as independent clients would send them:
 *
 *   random 60 %, by UUID 20 %, export 5 %, PNG 5 %, OData 5 % (added to random when absent), reports 5 %
 *
 * Rate limits are on but set so that only reports are refused (RATE_LIMIT_REPORT is low on purpose);
 * those 429s are counted apart. Anything else that is not 2xx/304 is an error, and the run fails.
 * Before the load, each type is timed alone (the idle baseline); during it the server's resident
 * memory is sampled every second and the first and last thirds are compared. Point lookups are also
 * timed by a latency probe in its own process (bench/latency-probe.ts), alone and then during the
 * load, one request at a time: the same instrument for both figures, at sub-millisecond resolution,
 * free of the load generator's own delays. Its p50 ratio is the one the performance bound is about.
 *
 *   npm run load
 *   LOAD_SECONDS=20 LOAD_RATE=400 npm run load
 *   LOAD_ONLY=random,PNG npm run load     # a part of the mix
 */
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { loadConfig } from '../src/config.ts';
import { migrate, openDatabase } from '../src/db/database.ts';
import { createStorage } from '../src/storage/index.ts';
import type { ProbeResult } from './latency-probe.ts';
import { startService, waitForQuiet } from './lib.ts';

const SECONDS = Number(process.env.LOAD_SECONDS ?? 60);
const RATE = Number(process.env.LOAD_RATE ?? 800);
const ENTRIES = Number(process.env.LOAD_ENTRIES ?? 20_000);
const PORT = Number(process.env.LOAD_PORT ?? 18201);
const REPORT_LIMIT = process.env.LOAD_REPORT_LIMIT ?? '100/1m';
const BASE = `http://127.0.0.1:${PORT}`;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nonsense-load-'));
const dbFile = path.join(dir, 'load.db');

async function seed(): Promise<string[]> {
  const database = await openDatabase(loadConfig({ DATABASE_URL: dbFile }).database);
  await migrate(database);
  const storage = createStorage(database);
  await storage.variables.insertMissing([{ name: '$ANIMAL$', description: 'An animal.', values: ['goose', 'capybara', 'newt'] }]);
  const uuids: string[] = [];
  const rows = Array.from({ length: ENTRIES }, (_, n) => {
    const uuid = randomUUID();
    uuids.push(uuid);
    const text = n % 10 === 0 ? `Entry ${n}: the $ANIMAL$ filed a complaint about the weather.` : `Entry ${n}: a sock went missing and came back wiser.`;
    return { uuid, text, timestamp: 1_600_000_000 + n };
  });
  await storage.entries.insertEntries(rows);
  await database.close();
  return uuids;
}

function rssMiB(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : 0;
}

interface RequestType {
  name: string;
  share: number;
  connections: number;
  /** The next request: a path, and for POSTs a body. */
  next: () => { path: string; method?: 'POST'; body?: string };
}

const pick = <T>(items: readonly T[]) => items[Math.floor(Math.random() * items.length)]!;
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;

/** PROBE_GAP_MS is the probe's pause between two requests: about 100 requests a second of its own. */
const PROBE_GAP_MS = 10;

/**
 * probe runs the latency probe (bench/latency-probe.ts) in its own process for `seconds`: point
 * lookups one at a time, alternating random and by UUID.
 */
function probe(uuids: readonly string[], seconds: number): Promise<ProbeResult> {
  const child = fork('bench/latency-probe.ts', [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const requests = uuids.slice(0, 200).flatMap((uuid) => [
    { kind: 'random', path: '/api/v1/nonsense/random' },
    { kind: 'by UUID', path: `/api/v1/nonsense/${uuid}` },
  ]);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the latency probe exited with ${code}`)));
    child.once('message', (result) => {
      child.removeAllListeners('exit');
      resolve(result as ProbeResult);
    });
    child.send({ base: BASE, requests, seconds, gapMs: PROBE_GAP_MS });
  });
}

/** idle times each request type alone, one request at a time: the baseline of the latencies under load. */
async function idle(type: RequestType, count: number): Promise<{ p50: number; p99: number }> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const request = type.next();
    const started = performance.now();
    const res = await fetch(`${BASE}${request.path}`, {
      method: request.method ?? 'GET',
      body: request.body,
      headers: request.body ? { 'content-type': 'application/json' } : undefined,
    });
    await res.arrayBuffer();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p99: percentile(times, 99) };
}

const uuids = await seed();
const server = await startService({
  DATABASE_URL: dbFile,
  PORT: String(PORT),
  LOG_LEVEL: process.env.LOAD_LOG_LEVEL ?? 'info',
  // Limits on, high enough never to refuse this client; only reports are refused, on purpose.
  RATE_LIMIT_READ: '100000000/1m',
  RATE_LIMIT_IMAGE: '100000000/1m',
  RATE_LIMIT_REPORT: REPORT_LIMIT,
});
const pid = server.pid;
try {
  // The entry cache and the galaxy's layout come after the start; the baseline and the load come after them.
  await fetch(`${BASE}/api/v1/nonsense/random`);
  if ((await waitForQuiet(pid)) === null) console.warn('the server was still busy after the start (the galaxy thread?) when the measurements began');
  const odata = (await fetch(`${BASE}/odata/v2/nonsense_list?$top=1`)).status === 200;
  if (!odata) console.warn('/odata/v2/nonsense_list does not answer: its 5 % goes to random.');
  const shareUuids = uuids.slice(0, 40);
  const first = 1_600_000_000;
  const all: RequestType[] = [
    { name: 'random', share: odata ? 0.6 : 0.65, connections: 12, next: () => ({ path: '/api/v1/nonsense/random' }) },
    { name: 'by UUID', share: 0.2, connections: 4, next: () => ({ path: `/api/v1/nonsense/${pick(uuids)}` }) },
    {
      name: 'export (about 1,000 entries)',
      share: 0.05,
      connections: 4,
      next: () => {
        const after = first + Math.floor(Math.random() * (ENTRIES - 1000));
        return { path: `/api/v1/nonsense?format=${pick(['csv', 'json', 'txt'])}&after=${after}&before=${after + 1001}` };
      },
    },
    { name: 'PNG (40 cards)', share: 0.05, connections: 4, next: () => ({ path: `/api/v1/nonsense/${pick(shareUuids)}.png` }) },
    ...(odata
      ? [{ name: 'OData page', share: 0.05, connections: 2, next: () => ({ path: `/odata/v2/nonsense_list?$top=20&$skip=${Math.floor(Math.random() * 1000)}&$format=${pick(['json', 'atom'])}` }) }]
      : []),
    {
      name: 'report',
      share: 0.05,
      connections: 2,
      next: () => ({ path: '/api/v1/nonsense/report', method: 'POST' as const, body: JSON.stringify({ entryUuid: pick(uuids), reason: 'other', details: 'load test' }) }),
    },
  ];
  // LOAD_ONLY=random,export runs a part of the mix (names by prefix), to find what costs most.
  const only = process.env.LOAD_ONLY?.split(',');
  const types = only ? all.filter((type) => only.some((name) => type.name.startsWith(name))) : all;

  console.log(`${ENTRIES} entries; idle baseline (one request at a time)...`);
  const baseline = new Map<string, { p50: number; p99: number }>();
  for (const type of types) baseline.set(type.name, await idle(type, type.name === 'report' ? 10 : 100));

  const lookups = types.some((type) => type.name === 'random' || type.name === 'by UUID');
  const idleProbe = lookups ? await probe(uuids, 10) : null;

  console.log(`load: ${RATE} req/s for ${SECONDS} s...`);
  const rss: number[] = [];
  const sampler = setInterval(() => rss.push(rssMiB(pid)), 1000);
  // The probe starts with the load and stops a second before it, so that it sees only the load.
  const loadProbe = lookups ? probe(uuids, Math.max(1, SECONDS - 1)) : null;
  const results = await Promise.all(
    types.map((type) =>
      autocannon({
        url: BASE,
        connections: type.connections,
        overallRate: Math.max(1, Math.round(RATE * type.share)),
        duration: SECONDS,
        timeout: 10,
        requests: [
          {
            setupRequest: (request) => {
              const next = type.next();
              return { ...request, path: next.path, method: next.method ?? 'GET', body: next.body, headers: next.body ? { 'content-type': 'application/json' } : {} };
            },
          },
        ],
      }),
    ),
  );
  clearInterval(sampler);
  const underLoad = await loadProbe;

  let failures = 0;
  let limited = 0;
  console.log(`\n${RATE} req/s offered for ${SECONDS} s; latencies in ms (idle: one request at a time before the load)`);
  console.log('| request | share | requests | req/s | p50 | p99 | idle p50 | idle p99 | p50 ratio | 429 (deliberate) | errors |');
  console.log('|---|---|---|---|---|---|---|---|---|---|---|');
  types.forEach((type, i) => {
    const result = results[i]!;
    const codes = result.statusCodeStats as Record<string, { count: number }>;
    const tooMany = codes['429']?.count ?? 0;
    const ok = Object.entries(codes).filter(([code]) => /^2\d\d$|^304$/.test(code)).reduce((sum, [, s]) => sum + s.count, 0);
    const wrong = Object.entries(codes).filter(([code]) => !/^2\d\d$|^304$|^429$/.test(code)).reduce((sum, [, s]) => sum + s.count, 0);
    // 429 is deliberate for reports only; anywhere else it is an error.
    const errors = result.errors + result.timeouts + wrong + (type.name === 'report' ? 0 : tooMany);
    if (type.name === 'report') limited += tooMany;
    failures += errors;
    const idleFigures = baseline.get(type.name)!;
    console.log(
      `| ${type.name} | ${Math.round(type.share * 100)} % | ${ok + tooMany + wrong} | ${result.requests.average.toFixed(0)} | ${result.latency.p50} | ${result.latency.p99} | ` +
        `${idleFigures.p50.toFixed(1)} | ${idleFigures.p99.toFixed(1)} | ${(result.latency.p50 / Math.max(0.1, idleFigures.p50)).toFixed(1)} | ${type.name === 'report' ? tooMany : '-'} | ${errors} |`,
    );
  });
  if (idleProbe !== null && underLoad !== null) {
    // The bound's figure: the same instrument alone and under the load (autocannon's latencies above
    // are whole milliseconds, and the idle column there comes from fetch in this process).
    console.log(`\npoint lookups timed by the latency probe (one at a time from its own process, every ${PROBE_GAP_MS} ms), in ms`);
    console.log('| request | idle p50 | idle p99 | under load p50 | under load p99 | p50 ratio | answers under load |');
    console.log('|---|---|---|---|---|---|---|');
    for (const kind of ['random', 'by UUID']) {
      const alone = idleProbe.latencies[kind] ?? [];
      const loaded = underLoad.latencies[kind] ?? [];
      if (alone.length === 0 || loaded.length === 0) continue;
      const p = (xs: number[], q: number) => percentile(xs, q).toFixed(2);
      console.log(`| ${kind} | ${p(alone, 50)} | ${p(alone, 99)} | ${p(loaded, 50)} | ${p(loaded, 99)} | **${(percentile(loaded, 50) / percentile(alone, 50)).toFixed(1)}** | ${loaded.length} |`);
    }
    if (idleProbe.failures + underLoad.failures > 0) {
      console.log(`probe answers that were not 2xx/304: ${idleProbe.failures + underLoad.failures}`);
      failures += idleProbe.failures + underLoad.failures;
    }
  }
  const third = Math.max(1, Math.floor(rss.length / 3));
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const early = mean(rss.slice(0, third));
  const late = mean(rss.slice(-third));
  console.log(`\nRSS: first third ${early.toFixed(0)} MiB, last third ${late.toFixed(0)} MiB (${(((late - early) / early) * 100).toFixed(1)} %), max ${Math.max(...rss).toFixed(0)} MiB`);
  console.log(`deliberate 429s (reports over RATE_LIMIT_REPORT=${REPORT_LIMIT}): ${limited}; errors: ${failures}`);
  if (failures > 0) process.exitCode = 1;
} finally {
  await server.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
