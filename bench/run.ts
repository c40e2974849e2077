/**
 * Throughput of the read API against a bare node:http server returning a fixed JSON body of the same
 * size to the same requests, measured in the same run, alternating, so machine noise hits both alike. The service runs
 * compiled, with the default configuration (CORS, request ids, security headers, metrics and the
 * access log at `info`), rate limits off; it is measured once its entry snapshot holds every entry
 * and the process is otherwise idle (the galaxy's thread done with its layout): the steady state, and
 * the time that took is printed. Besides requests a second, the CPU time each
 * server spent per request, which noise from other processes on the machine disturbs less.
 *
 *   npm run bench                                   # 100,000 entries, 3 rounds of 5 s per target
 *   BENCH_ENTRIES=100000,1000000 BENCH_KEEP=1 npm run bench
 *   BENCH_SECONDS=10 BENCH_ROUNDS=5 BENCH_CONNECTIONS=20 BENCH_WARMUP=5 npm run bench
 */
import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadRound, type LoadRound, median, memory, seed, startService, waitForQuiet, waitForSnapshot } from './lib.ts';

const SIZES = (process.env.BENCH_ENTRIES ?? '100000').split(',').map(Number);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
/** Seconds of load before the measured rounds, for each server and target alike (not counted). */
const WARMUP = Number(process.env.BENCH_WARMUP ?? 5);
const SERVICE_PORT = '18181';
const BARE_PORT = '18182';

function startBare(body: string): Promise<ChildProcess> {
  const child = fork('bench/bare-server.ts', [], {
    env: { ...process.env, PORT: BARE_PORT, BARE_BODY: body },
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
    try {
      const warm = await waitForSnapshot(service.url, entries);
      const quiet = await waitForQuiet(service.pid);
      notes.push(
        `${entries} entries: first answer ${service.startMs.toFixed(0)} ms after the start; ` +
          (warm === null ? 'the entry snapshot was not complete (measured on the database path)' : `entry snapshot complete ${(warm / 1000).toFixed(1)} s after the first request`) +
          (quiet === null ? '; the process was still busy (the galaxy thread?) when measuring began' : `; idle (galaxy laid out) ${(quiet / 1000).toFixed(0)} s later`),
      );
      const byUuidPaths = seeded.sample.map((u) => `/api/v1/nonsense/${u}`);
      const typical = await (await fetch(`${service.url}${byUuidPaths[1]}`)).text();
      bare = await startBare(typical);
      const targets = [
        { name: 'GET /api/v1/nonsense/random', path: '/api/v1/nonsense/random', paths: undefined },
        { name: 'GET /api/v1/nonsense/<uuid>', path: '', paths: byUuidPaths },
      ];
      for (const target of targets) {
        const own: LoadRound[] = [];
        const base: LoadRound[] = [];
        // Warm-up: V8 optimises the request path and sizes its young generation to the load over the
        // first seconds of it (the first 5 s ran 10-20 % slower than the next on this host).
        if (WARMUP > 0) {
          await measure(`${service.url}${target.path}`, service.pid, target.paths, WARMUP);
          await measure(`http://127.0.0.1:${BARE_PORT}${target.path}`, bare.pid!, target.paths, WARMUP);
        }
        for (let round = 0; round < ROUNDS; round++) {
          const s = await measure(`${service.url}${target.path}`, service.pid, target.paths);
          // The bare server gets the same requests (it ignores the path): the same request lines to parse,
          // and the same work for the client, which shares the machine.
          const b = await measure(`http://127.0.0.1:${BARE_PORT}${target.path}`, bare.pid!, target.paths);
          own.push(s);
          base.push(b);
          console.log(`${target.name} round ${round + 1}: service ${s.rps.toFixed(0)} req/s (${s.cpu.toFixed(1)} µs CPU/req), bare ${b.rps.toFixed(0)} req/s (${b.cpu.toFixed(1)} µs)`);
        }
        const pick = (rounds: LoadRound[], key: keyof LoadRound) => median(rounds.map((r) => r[key]));
        rows.push(
          `| ${target.name} | ${entries.toLocaleString('en')} | ${pick(own, 'rps').toFixed(0)} | ${pick(own, 'p99')} ms | ${pick(own, 'cpu').toFixed(1)} µs | ` +
            `${pick(base, 'rps').toFixed(0)} | ${pick(base, 'p99')} ms | ${pick(base, 'cpu').toFixed(1)} µs | ` +
            `**${(pick(own, 'rps') / pick(base, 'rps')).toFixed(2)}** | ${(pick(base, 'cpu') / pick(own, 'cpu')).toFixed(2)} | ${own.reduce((n, r) => n + r.errors, 0)} |`,
        );
      }
      const mem = memory(service.pid);
      notes.push(`${entries} entries: service RSS after the run ${mem.rss.toFixed(0)} MiB (anonymous ${mem.anon.toFixed(0)}, file-backed ${mem.file.toFixed(0)}); body ${typical.length} bytes`);
    } finally {
      bare?.kill('SIGTERM');
      await service.stop();
    }
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
console.log(`\n${CONNECTIONS} connections, ${ROUNDS} rounds of ${SECONDS} s per target, alternating with the bare server; medians`);
console.log('| endpoint | entries | service req/s | service p99 | service CPU/req | bare req/s | bare p99 | bare CPU/req | ratio (req/s) | ratio (CPU/req) | errors |');
console.log('|---|---|---|---|---|---|---|---|---|---|---|');
for (const row of rows) console.log(row);
for (const note of notes) console.log(`- ${note}`);
