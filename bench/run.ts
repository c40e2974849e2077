/**
 * Throughput of the read API against a bare node:http server returning a fixed JSON body of the same
 * size, measured in the same run, alternating, so machine noise hits both alike.
 *
 *   npm run bench                      # 100,000 entries, 3 rounds of 5 s per target
 *   BENCH_ENTRIES=1000000 BENCH_SECONDS=10 BENCH_ROUNDS=2 npm run bench
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { loadConfig } from '../src/config.ts';
import { migrate, openDatabase } from '../src/db/database.ts';
import { createStorage } from '../src/storage/index.ts';

const ENTRIES = Number(process.env.BENCH_ENTRIES ?? 100_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nonsense-bench-'));
const dbFile = path.join(dir, 'bench.db');

async function seed(): Promise<string[]> {
  const started = Date.now();
  const database = await openDatabase(loadConfig({ DATABASE_URL: dbFile }).database);
  await migrate(database);
  const storage = createStorage(database);
  await storage.variables.insertMissing([{ name: '$ANIMAL$', description: 'An animal.', values: ['goose', 'capybara', 'newt'] }]);
  const uuids: string[] = [];
  const batch = 10_000;
  for (let start = 0; start < ENTRIES; start += batch) {
    const entries = Array.from({ length: Math.min(batch, ENTRIES - start) }, (_, i) => {
      const n = start + i;
      const uuid = randomUUID();
      uuids.push(uuid);
      const text = n % 10 === 0 ? `Entry ${n}: the $ANIMAL$ filed a complaint about the weather.` : `Entry ${n}: a sock went missing and came back wiser.`;
      return { uuid, text, timestamp: 1_600_000_000 + n };
    });
    await storage.entries.insertEntries(entries);
  }
  await database.close();
  console.log(`seeded ${ENTRIES} entries in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return uuids;
}

function start(script: string, env: Record<string, string>): Promise<ChildProcess> {
  const child = fork(script, ['serve'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    execArgv: script.endsWith('.ts') ? ['--import', 'tsx'] : [],
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
    const poll = setInterval(async () => {
      try {
        await fetch(`http://127.0.0.1:${env.PORT}/healthz`);
        clearInterval(poll);
        child.removeAllListeners('exit');
        resolve(child);
      } catch {
        /* not up yet */
      }
    }, 100);
  });
}

async function measure(url: string, paths?: string[]): Promise<{ rps: number; p99: number; errors: number }> {
  let i = 0;
  const result = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: SECONDS,
    requests: paths ? [{ setupRequest: (req) => ({ ...req, path: paths[i++ % paths.length]! }) }] : undefined,
  });
  return { rps: result.requests.average, p99: result.latency.p99, errors: result.errors + result.non2xx };
}

const uuids = await seed();
const SERVICE_PORT = '18181';
const BARE_PORT = '18182';
const service = await start('bin/nonsense.js', {
  DATABASE_URL: dbFile, PORT: SERVICE_PORT, LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info', DEMO_DATA: 'off', RATE_LIMIT_READ: 'off',
});
const sample = uuids.filter((_, i) => i % Math.max(1, Math.floor(uuids.length / 1000)) === 0);
const byUuidPaths = sample.map((u) => `/api/v1/nonsense/${u}`);
const typical = await (await fetch(`http://127.0.0.1:${SERVICE_PORT}${byUuidPaths[1]}`)).text();
const bare = await start('bench/bare-server.ts', { PORT: BARE_PORT, BARE_BODY: typical });

const targets = [
  { name: 'GET /api/v1/nonsense/random', path: '/api/v1/nonsense/random', paths: undefined },
  { name: 'GET /api/v1/nonsense/<uuid>', path: '', paths: byUuidPaths },
];
const rows: string[] = [];
try {
  for (const target of targets) {
    const service = { rps: [] as number[], p99: [] as number[], errors: 0 };
    const baseline = { rps: [] as number[], p99: [] as number[], errors: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      const s = await measure(`http://127.0.0.1:${SERVICE_PORT}${target.path}`, target.paths);
      const b = await measure(`http://127.0.0.1:${BARE_PORT}/`);
      service.rps.push(s.rps); service.p99.push(s.p99); service.errors += s.errors;
      baseline.rps.push(b.rps); baseline.p99.push(b.p99); baseline.errors += b.errors;
      console.log(`${target.name} round ${round + 1}: service ${s.rps.toFixed(0)} req/s, bare ${b.rps.toFixed(0)} req/s`);
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const ratio = median(service.rps) / median(baseline.rps);
    rows.push(
      `| ${target.name} | ${median(service.rps).toFixed(0)} | ${median(service.p99)} ms | ${median(baseline.rps).toFixed(0)} | ` +
        `${median(baseline.p99)} ms | ${ratio.toFixed(2)} | ${service.errors} |`,
    );
  }
} finally {
  service.kill('SIGTERM');
  bare.kill('SIGTERM');
  fs.rmSync(dir, { recursive: true, force: true });
}
console.log(`\n${ENTRIES} entries, ${CONNECTIONS} connections, ${ROUNDS} rounds of ${SECONDS} s, medians; body ${typical.length} bytes`);
console.log('| endpoint | service req/s | service p99 | bare node:http req/s | bare p99 | ratio | errors |');
console.log('|---|---|---|---|---|---|---|');
for (const row of rows) console.log(row);
