/**
 * Entry reads on a large embedded database (1,000,000 entries by default), with the default
 * configuration: start → first random 200, RSS after start and after the load, random and by-UUID
 * requests/s beside a bare node:http server answering an entry's body (interleaved rounds, the ratio
 * of each pair), the first status after a change, and the event loop's longest hold during admin
 * writes, as a probe process one request at a time sees it (bench/latency-probe.ts).
 *
 *   npm run bench:entries
 *   ENTRY_READS_ENTRIES=100000 ENTRY_READS_SECONDS=5 ENTRY_READS_FILE=/tmp/reads.db npm run bench:entries
 *
 * ENTRY_READS_FILE keeps the seeded database for the next run (seeding a million takes about a minute).
 */
import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { loadConfig } from '../src/config.ts';
import { migrate, openDatabase } from '../src/db/database.ts';
import type { ProbeResult } from './latency-probe.ts';
import { loadRound, memory, metric, startService, type Service } from './lib.ts';

const ENTRIES = Number(process.env.ENTRY_READS_ENTRIES ?? 1_000_000);
const SECONDS = Number(process.env.ENTRY_READS_SECONDS ?? 10);
const ROUNDS = Number(process.env.ENTRY_READS_ROUNDS ?? 3);
const CONNECTIONS = 20;
const SERVICE_PORT = '18501';
const BARE_PORT = '18502';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nonsense-entry-reads-'));
const file = process.env.ENTRY_READS_FILE ?? path.join(dir, 'reads.db');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** seed fills the file in the database itself (a million inserts from here would measure the client). */
async function seed(): Promise<string> {
  const database = await openDatabase(loadConfig({ DATABASE_URL: file }).database);
  try {
    await migrate(database);
    const { n } = (await sql<{ n: number }>`select count(*) as n from entries`.execute(database.db)).rows[0]!;
    if (n >= ENTRIES) return `reused ${file} (${n} entries)`;
    const started = Date.now();
    // Texts of about 110 characters, varied, some multi-line.
    await sql`with recursive n(i) as (select ${n + 1} union all select i + 1 from n where i < ${ENTRIES})
      insert into entries (uuid, text, text_key, created_at, state, updated_at)
      select lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-a' ||
             substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6))),
             'Entry ' || i || ': a sock went missing on a Tuesday and came back ' || (i % 97) || ' days later, wiser' ||
               case when i % 12 = 0 then char(10) || 'and quieter.' else ', and louder than before.' end,
             'entry ' || i || ': a sock went missing on a tuesday and came back ' || (i % 97) || ' days later, wiser' ||
               case when i % 12 = 0 then char(10) || 'and quieter.' else ', and louder than before.' end,
             1500000000 + i * 150, 'visible', 0 from n`.execute(database.db);
    await sql`update meta set value = value + 1 where key = 'revision'`.execute(database.db);
    return `seeded ${ENTRIES - n} entries in ${((Date.now() - started) / 1000).toFixed(0)} s`;
  } finally {
    await database.close();
  }
}

async function sampleUuids(count: number): Promise<string[]> {
  const database = await openDatabase(loadConfig({ DATABASE_URL: file }).database);
  // Spread over the ids, each read by primary key: no scan.
  const uuids: string[] = [];
  for (let i = 0; i < count; i++) {
    const row = await database.db.selectFrom('entries').select('uuid').where('id', '>=', 1 + Math.floor(Math.random() * ENTRIES)).orderBy('id').limit(1).executeTakeFirst();
    if (row) uuids.push(row.uuid);
  }
  await database.close();
  return uuids;
}

function startBare(body: string): Promise<ChildProcess> {
  const child = fork('bench/bare-server.ts', [], { env: { ...process.env, PORT: BARE_PORT, BARE_BODY: body }, stdio: ['ignore', 'ignore', 'inherit', 'ipc'], execArgv: ['--import', 'tsx'] });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('message', () => resolve(child));
  });
}

/** probe runs the latency probe on `paths` for `seconds` while `during` runs, and returns its latencies. */
async function probe(base: string, paths: string[], seconds: number, during: () => Promise<void> = async () => {}): Promise<ProbeResult> {
  const child = fork('bench/latency-probe.ts', [], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'], execArgv: ['--import', 'tsx'] });
  const result = new Promise<ProbeResult>((resolve) => child.once('message', (message) => resolve(message as ProbeResult)));
  child.send({ base, requests: paths.map((p) => ({ kind: 'all', path: p })), seconds, gapMs: 1 });
  await sleep(300);
  await during();
  return result;
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

let service: Service | undefined;
let bare: ChildProcess | undefined;
const lines: string[] = [];
const say = (line: string) => {
  console.log(line);
  lines.push(line);
};
try {
  say(await seed());
  const uuids = await sampleUuids(2000);
  service = await startService({ DATABASE_URL: file, PORT: SERVICE_PORT, LOG_LEVEL: 'warn', RATE_LIMIT_READ: 'off' }, '/api/v1/nonsense/random');
  const base = service.url;
  say(`start → first random 200: ${(service.startMs / 1000).toFixed(2)} s`);
  const afterStart = memory(service.pid);
  say(`RSS after start: ${afterStart.rss.toFixed(0)} MiB`);

  const token = execFileSync(process.execPath, ['bin/nonsense.js', 'token', 'create', `reads-${Date.now()}`], { env: { ...process.env, DATABASE_URL: file, LOG_LEVEL: 'warn' } })
    .toString().trim().split('\n').at(-1)!;
  const admin = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const write = async (i: number) => {
    const created = (await (await fetch(`${base}/api/v1/admin/nonsense`, { method: 'POST', headers: admin, body: JSON.stringify({ text: `Written during the probe, ${Date.now()} ${i}.` }) })).json()) as { uuid: string };
    await (await fetch(`${base}/api/v1/admin/nonsense/${created.uuid}`, { method: 'PATCH', headers: admin, body: JSON.stringify({ state: 'hidden' }) })).arrayBuffer();
    await (await fetch(`${base}/api/v1/admin/nonsense/${created.uuid}`, { method: 'PATCH', headers: admin, body: JSON.stringify({ state: 'visible' }) })).arrayBuffer();
    await (await fetch(`${base}/api/v1/admin/nonsense/${created.uuid}`, { method: 'DELETE', headers: admin })).arrayBuffer();
  };

  // The first status after a change, a few times.
  const statusMs: number[] = [];
  const againMs: number[] = [];
  const timeStatus = async () => {
    const started = performance.now();
    await (await fetch(`${base}/api/v1/nonsense/status`)).arrayBuffer();
    return performance.now() - started;
  };
  for (let i = 0; i < 5; i++) {
    await write(i);
    statusMs.push(await timeStatus());
    againMs.push(await timeStatus());
  }
  say(`status, first call after a change: median ${median(statusMs).toFixed(1)} ms, max ${Math.max(...statusMs).toFixed(1)} ms (the next call: median ${median(againMs).toFixed(1)} ms)`);

  // The event loop while admins write: health checks, random and by-UUID one at a time, with and without writes.
  const paths = ['/healthz', '/api/v1/nonsense/random', `/api/v1/nonsense/${uuids[0]}`];
  // The service's own measure too: the event loop's longest delay since the last scrape (prom-client resets it).
  const lagMax = async () => ((await metric(base, 'nodejs_eventloop_lag_max_seconds')) ?? NaN) * 1000;
  await lagMax();
  const quiet = (await probe(base, paths, 4)).latencies.all!;
  const quietLag = await lagMax();
  const busy = (await probe(base, paths, 6, async () => {
    for (let i = 0; i < 10; i++) {
      await write(100 + i);
      await sleep(200);
    }
  })).latencies.all!;
  const busyLag = await lagMax();
  say(`event loop, longest delay: ${quietLag.toFixed(1)} ms without writes, ${busyLag.toFixed(1)} ms during 40 admin writes`);
  say(`probe latency without writes: p50 ${quantile(quiet, 0.5).toFixed(2)} ms, p99 ${quantile(quiet, 0.99).toFixed(2)} ms, max ${quiet.at(-1)!.toFixed(1)} ms`);
  say(`probe latency during 40 admin writes (create, hide, show, delete): p50 ${quantile(busy, 0.5).toFixed(2)} ms, p99 ${quantile(busy, 0.99).toFixed(2)} ms, max ${busy.at(-1)!.toFixed(1)} ms`);

  // Requests/s beside the bare server answering a typical body, in interleaved rounds.
  const body = await (await fetch(`${base}/api/v1/nonsense/${uuids[0]}`)).text();
  bare = await startBare(body);
  const bareUrl = `http://127.0.0.1:${BARE_PORT}`;
  const byUuid = uuids.map((u) => `/api/v1/nonsense/${u}`);
  for (const [label, paths] of [['random', ['/api/v1/nonsense/random']], ['by UUID', byUuid]] as const) {
    const ratios: number[] = [];
    const rates: number[] = [];
    await loadRound(base, service.pid, { connections: CONNECTIONS, seconds: 2, paths: [...paths] });
    for (let round = 0; round < ROUNDS; round++) {
      const s = await loadRound(base, service.pid, { connections: CONNECTIONS, seconds: SECONDS, paths: [...paths] });
      const b = await loadRound(bareUrl, bare.pid!, { connections: CONNECTIONS, seconds: SECONDS });
      ratios.push(s.rps / b.rps);
      rates.push(s.rps);
      if (s.errors > 0) say(`  ${label}: ${s.errors} errors`);
    }
    say(`${label}: ${median(rates).toFixed(0)} req/s, of bare ${median(ratios).toFixed(2)} (rounds ${ratios.map((r) => r.toFixed(2)).join(', ')})`);
  }
  const afterLoad = memory(service.pid);
  const heap = async (name: string) => (((await metric(base, name)) ?? NaN) / 2 ** 20).toFixed(0);
  say(
    `RSS after ${2 * ROUNDS * SECONDS + 4} s of random and by-UUID load: ${afterLoad.rss.toFixed(0)} MiB (peak ${afterLoad.peak.toFixed(0)} MiB; ` +
      `main heap ${await heap('nodejs_heap_size_used_bytes')} MiB used of ${await heap('nodejs_heap_size_total_bytes')} MiB)`,
  );
  const held = (await (await fetch(`${base}/metrics`)).text()).split('\n').filter((l) => l.includes('cache="entry_snapshot"'));
  say(`entry cache: ${held.join('; ')}`);
} finally {
  bare?.kill();
  await service?.stop();
  if (process.env.ENTRY_READS_FILE === undefined) fs.rmSync(dir, { recursive: true, force: true });
}
console.log(`\n${ENTRIES} entries on SQLite, default configuration, ${CONNECTIONS} connections, ${os.cpus().length} cores, load average ${os.loadavg()[0]!.toFixed(1)}`);
