/**
 * Throughput of the read API against a bare node:http server returning a fixed JSON body of the same
 * size to the same requests, measured in the same run. The service runs compiled, with the default
 * configuration (CORS, request ids, security headers, metrics and the access log at `info`), rate
 * limits off; it is measured once its entry cache holds every entry and the process is otherwise
 * idle (the galaxy's thread done with its layout): the steady state, and the time that took is
 * printed. Besides requests a second, the CPU time each server spent per request.
 *
 * How noise is kept out: the two servers take turns in short rounds, each round a pair of one slice
 * each, in the order service-bare, then bare-service (ABBA), so that a drift of the machine's speed
 * hits both alike. The ratio is the median of the pairs' own ratios: on a shared host whose speed
 * changes by half within seconds, comparing each slice with its neighbour in time is what cancels it
 * (docs/performance.md, "Read API"). The ratio of the two medians is printed beside it.
 * BENCH_CONTROL=1 puts a second copy of the bare server in the service's place: the method's own
 * spread, which should centre on 1.00.
 *
 *   npm run bench                                   # 100,000 entries, 12 pairs of 2 s slices per target
 *   BENCH_ENTRIES=100000,1000000 BENCH_KEEP=1 npm run bench
 *   BENCH_SECONDS=5 BENCH_ROUNDS=5 BENCH_CONNECTIONS=20 BENCH_WARMUP=5 npm run bench
 *   BENCH_CONTROL=1 npm run bench                   # the bare server against its own copy
 *   BENCH_PATHS=random npm run bench                # one endpoint only (random or uuid)
 */
import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadRound, type LoadRound, median, memory, seed, startService, waitForQuiet, waitForSnapshot } from './lib.ts';

const SIZES = (process.env.BENCH_ENTRIES ?? '100000').split(',').map(Number);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 12);
const CONTROL = process.env.BENCH_CONTROL === '1';
/** The endpoints measured: `random`, `uuid` or both. */
const TARGETS = (process.env.BENCH_PATHS ?? 'random,uuid').split(',');
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
/** Seconds of load before the measured rounds, for each server and target alike (not counted). */
const WARMUP = Number(process.env.BENCH_WARMUP ?? 5);
const SERVICE_PORT = '18181';
const BARE_PORT = '18182';
const CONTROL_PORT = '18183';

function startBare(body: string, port = BARE_PORT): Promise<ChildProcess> {
  const child = fork('bench/bare-server.ts', [], {
    env: { ...process.env, PORT: port, BARE_BODY: body },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    execArgv: ['--import', 'tsx'],
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('message', () => resolve(child));
  });
}

/** One measured round of `target` on the server `pid` (the service or the bare server). */
const measure = (url: string, pid: number, paths?: string[], seconds = SECONDS) => loadRound(url, pid, { connections: CONNECTIONS, seconds, paths });

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nonsense-bench-'));
const rows: string[] = [];
const notes: string[] = [];
try {
  for (const entries of SIZES) {
    const seedStarted = Date.now();
    const seeded = await seed(entries, dir);
    console.log(`${entries} entries: ${seeded.fresh ? `seeded in ${((Date.now() - seedStarted) / 1000).toFixed(1)} s` : `reused ${seeded.file}`}`);
    const service = await startService({ DATABASE_URL: seeded.file, PORT: SERVICE_PORT, LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info', RATE_LIMIT_READ: 'off' });
    let bare: ChildProcess | undefined;
    let control: ChildProcess | undefined;
    try {
      const warm = await waitForSnapshot(service.url, entries);
      const quiet = await waitForQuiet(service.pid);
      notes.push(
        `${entries} entries: first answer ${service.startMs.toFixed(0)} ms after the start; ` +
          (warm === null ? 'the entry cache was not complete (measured on the database path)' : `entry cache complete ${(warm / 1000).toFixed(1)} s after the first request`) +
          (quiet === null ? '; the process was still busy (the galaxy thread?) when measuring began' : `; idle (galaxy laid out) ${(quiet / 1000).toFixed(0)} s later`),
      );
      const byUuidPaths = seeded.sample.map((u) => `/api/v1/nonsense/${u}`);
      const typical = await (await fetch(`${service.url}${byUuidPaths[1]}`)).text();
      bare = await startBare(typical);
      // The server measured against the bare one: the service, or under BENCH_CONTROL a copy of the bare server.
      control = CONTROL ? await startBare(typical, CONTROL_PORT) : undefined;
      const own = control === undefined ? { url: service.url, pid: service.pid } : { url: `http://127.0.0.1:${CONTROL_PORT}`, pid: control.pid! };
      const bareServer = { url: `http://127.0.0.1:${BARE_PORT}`, pid: bare.pid! };
      const targets = [
        { key: 'random', name: 'GET /api/v1/nonsense/random', path: '/api/v1/nonsense/random', paths: undefined },
        { key: 'uuid', name: 'GET /api/v1/nonsense/<uuid>', path: '', paths: byUuidPaths },
      ].filter((target) => TARGETS.includes(target.key));
      for (const target of targets) {
        // The bare server gets the same requests (it ignores the path): the same request lines to parse,
        // and the same work for the client, which shares the machine.
        const slice = (server: { url: string; pid: number }, seconds = SECONDS) => measure(`${server.url}${target.path}`, server.pid, target.paths, seconds);
        const serviceRounds: LoadRound[] = [];
        const bareRounds: LoadRound[] = [];
        const ratios: number[] = [];
        // Warm-up: V8 optimises the request path and sizes its young generation to the load over the
        // first seconds of it (the first 5 s ran 10-20 % slower than the next on this host).
        if (WARMUP > 0) {
          await slice(own, WARMUP);
          await slice(bareServer, WARMUP);
        }
        for (let round = 0; round < ROUNDS; round++) {
          const serviceFirst = round % 2 === 0;
          const first = await slice(serviceFirst ? own : bareServer);
          const second = await slice(serviceFirst ? bareServer : own);
          const [s, b] = serviceFirst ? [first, second] : [second, first];
          serviceRounds.push(s);
          bareRounds.push(b);
          ratios.push(s.rps / b.rps);
          console.log(
            `${target.name} round ${round + 1} (${serviceFirst ? 'service first' : 'bare first'}): ${CONTROL ? 'bare copy' : 'service'} ${s.rps.toFixed(0)} req/s (${s.cpu.toFixed(1)} µs CPU/req), ` +
              `bare ${b.rps.toFixed(0)} req/s (${b.cpu.toFixed(1)} µs): ${(s.rps / b.rps).toFixed(2)}`,
          );
        }
        const pick = (rounds: LoadRound[], key: keyof LoadRound) => median(rounds.map((r) => r[key]));
        const sorted = [...ratios].sort((a, b) => a - b);
        const quartile = (q: number) => sorted[Math.round(q * (sorted.length - 1))]!;
        rows.push(
          `| ${target.name} | ${entries.toLocaleString('en')} | ${pick(serviceRounds, 'rps').toFixed(0)} | ${pick(serviceRounds, 'p99')} ms | ${pick(serviceRounds, 'cpu').toFixed(1)} µs | ` +
            `${pick(bareRounds, 'rps').toFixed(0)} | ${pick(bareRounds, 'p99')} ms | ${pick(bareRounds, 'cpu').toFixed(1)} µs | ` +
            `**${median(ratios).toFixed(2)}** (${quartile(0.25).toFixed(2)}–${quartile(0.75).toFixed(2)}) | ${(pick(serviceRounds, 'rps') / pick(bareRounds, 'rps')).toFixed(2)} | ` +
            `${(pick(bareRounds, 'cpu') / pick(serviceRounds, 'cpu')).toFixed(2)} | ${serviceRounds.reduce((n, r) => n + r.errors, 0)} |`,
        );
      }
      const mem = memory(service.pid);
      notes.push(`${entries} entries: service RSS after the run ${mem.rss.toFixed(0)} MiB (anonymous ${mem.anon.toFixed(0)}, file-backed ${mem.file.toFixed(0)}); body ${typical.length} bytes`);
    } finally {
      bare?.kill('SIGTERM');
      control?.kill('SIGTERM');
      await service.stop();
    }
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
console.log(
  `\n${CONNECTIONS} connections, ${ROUNDS} pairs of ${SECONDS} s slices per target, service and bare server in turn (ABBA); medians.` +
    ` The ratio is the median of the pairs' ratios (interquartile range in brackets); beside it, the ratio of the medians.` +
    (CONTROL ? ' CONTROL RUN: a copy of the bare server in the service\'s place.' : ''),
);
console.log('| endpoint | entries | service req/s | service p99 | service CPU/req | bare req/s | bare p99 | bare CPU/req | ratio (req/s) | ratio of medians | ratio (CPU/req) | errors |');
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
for (const row of rows) console.log(row);
for (const note of notes) console.log(`- ${note}`);
