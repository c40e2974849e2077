/**
 * Fault and consistency check of the local cluster (scripts/cluster.sh): three instances behind nginx
 * over one PostgreSQL database.
 *
 * 1. A change made through one instance (new entry, hidden entry, new variable) must be visible
 *    through every instance within 2 s.
 * 2. Under load through nginx, one instance is killed with SIGKILL and another stopped with SIGTERM;
 *    the rest keep answering, and every write that was acknowledged (201) must be in the database.
 *
 *   npm run cluster:check            # needs nginx, PostgreSQL and Redis on this machine
 */
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';

const PORT = Number(process.env.CLUSTER_PORT ?? 18300);
const SERVER = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const DB = `nonsense_cluster_${Date.now()}`;
const url = new URL(SERVER);
url.pathname = `/${DB}`;
const DATABASE_URL = url.href;
const RUN_DIR = fs.mkdtempSync(path.join(os.tmpdir(), 'nonsense-cluster-check-'));
const LOAD_SECONDS = Number(process.env.CLUSTER_LOAD_SECONDS ?? 20);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const base = (instance?: number) => `http://127.0.0.1:${instance === undefined ? PORT : PORT + instance}`;
let failures = 0;
function check(ok: boolean, message: string) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${message}`);
  if (!ok) failures++;
}

const cluster = spawn('scripts/cluster.sh', [], {
  env: { ...process.env, PORT: String(PORT), DATABASE_URL, RUN_DIR, INSTANCES: '3', RATE_LIMIT_READ: 'off', RATE_LIMIT_IMAGE: 'off' },
  stdio: ['ignore', 'pipe', 'inherit'],
  detached: true,
});
let clusterOutput = '';
cluster.stdout.on('data', (chunk) => (clusterOutput += chunk));
try {
  for (let i = 0; !clusterOutput.includes('cluster ready'); i++) {
    if (i > 600) throw new Error(`cluster did not start:\n${clusterOutput}`);
    await sleep(100);
  }
  const token = execFileSync(process.execPath, ['bin/nonsense.js', 'token', 'create', 'cluster-check'], { env: { ...process.env, DATABASE_URL } })
    .toString().trim().split('\n').at(-1)!;
  const admin = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };

  // 1. Visibility across instances.
  const started = Date.now();
  const created = await (await fetch(`${base(1)}/api/v1/admin/nonsense`, { method: 'POST', headers: admin, body: JSON.stringify({ text: `Made on instance 1 at ${started}` }) })).json() as { uuid: string };
  const visibleWithin = async (instance: number, probe: () => Promise<boolean>) => {
    const t0 = Date.now();
    while (Date.now() - t0 < 5000) {
      if (await probe()) return Date.now() - t0;
      await sleep(50);
    }
    return Infinity;
  };
  for (const instance of [2, 3]) {
    const ms = await visibleWithin(instance, async () => (await fetch(`${base(instance)}/api/v1/nonsense/status`)).ok &&
      (await (await fetch(`${base(instance)}/api/v1/nonsense?format=json&q=${encodeURIComponent(`at ${started}`)}`)).json() as unknown[]).length === 1);
    check(ms <= 2000, `new entry visible through instance ${instance} after ${ms} ms`);
  }
  await fetch(`${base(1)}/api/v1/admin/nonsense/${created.uuid}`, { method: 'PATCH', headers: admin, body: JSON.stringify({ state: 'hidden' }) });
  for (const instance of [2, 3]) {
    const ms = await visibleWithin(instance, async () => (await fetch(`${base(instance)}/api/v1/nonsense/${created.uuid}`)).status === 404);
    check(ms <= 2000, `hidden entry gone from instance ${instance} after ${ms} ms`);
  }
  await fetch(`${base(1)}/api/v1/admin/variables/%24CLUSTER%24`, { method: 'PUT', headers: admin, body: JSON.stringify({ description: 'Cluster check.', values: ['yes'] }) });
  for (const instance of [2, 3]) {
    const ms = await visibleWithin(instance, async () =>
      ((await (await fetch(`${base(instance)}/api/v1/variables`)).json()) as { name: string }[]).some((v) => v.name === '$CLUSTER$'));
    check(ms <= 2000, `new variable visible through instance ${instance} after ${ms} ms`);
  }

  // 2. Faults under load through nginx.
  const acknowledged: string[] = [];
  let writeErrors = 0;
  let writing = true;
  const writer = (async () => {
    for (let n = 0; writing; n++) {
      try {
        const res = await fetch(`${base()}/api/v1/admin/nonsense`, { method: 'POST', headers: admin, body: JSON.stringify({ text: `Load write ${n} ${started}` }) });
        if (res.status === 201) acknowledged.push(((await res.json()) as { uuid: string }).uuid);
        else writeErrors++;
      } catch {
        writeErrors++;
      }
    }
  })();
  const pidOf = (i: number) => Number(fs.readFileSync(path.join(RUN_DIR, `instance-${i}.pid`), 'utf8'));
  const faults = (async () => {
    await sleep((LOAD_SECONDS * 1000) / 3);
    process.kill(pidOf(1), 'SIGKILL');
    console.log('     killed instance 1 with SIGKILL');
    await sleep((LOAD_SECONDS * 1000) / 3);
    process.kill(pidOf(2), 'SIGTERM');
    console.log('     stopped instance 2 with SIGTERM');
  })();
  const load = await autocannon({ url: `${base()}/api/v1/nonsense/random`, connections: 20, duration: LOAD_SECONDS });
  await faults;
  writing = false;
  await writer;
  const total = load.requests.total;
  const failed = load.errors + load.non2xx;
  console.log(`     load: ${total} requests, ${load.requests.average.toFixed(0)} req/s, p99 ${load.latency.p99} ms, ${failed} failed (${load.errors} errors, ${load.non2xx} non-2xx)`);
  check(failed <= total * 0.001, `at most 0.1% of reads failed while instances died (${failed} of ${total})`);
  check((await fetch(`${base(3)}/readyz`)).ok, 'the surviving instance is ready');

  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  const { rows } = await client.query('select count(*)::int as n from entries where uuid = any($1)', [acknowledged]);
  await client.end();
  check(rows[0].n === acknowledged.length, `every acknowledged write is stored (${rows[0].n} of ${acknowledged.length}; ${writeErrors} writes refused or cut off)`);
} finally {
  try {
    process.kill(-cluster.pid!, 'SIGTERM');
  } catch {
    /* already gone */
  }
  await sleep(1500);
  const client = new pg.Client({ connectionString: SERVER });
  await client.connect();
  await client.query(`drop database if exists ${DB} with (force)`);
  await client.end();
  fs.rmSync(RUN_DIR, { recursive: true, force: true });
}
console.log(failures === 0 ? 'cluster check passed' : `cluster check FAILED (${failures})`);
process.exit(failures === 0 ? 0 : 1);
