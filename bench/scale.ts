/**
 * The same service on SQLite and on PostgreSQL with a large database (1,000,000 entries by default):
 * requests/s of random and by-UUID through one instance of each, and through nginx in front of three
 * PostgreSQL instances; the full CSV export's time and the serving process's peak RSS.
 *
 *   npm run bench:scale                         # needs PostgreSQL, Redis and nginx (scripts/cluster.sh)
 *   SCALE_ENTRIES=200000 SCALE_SECONDS=5 npm run bench:scale
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { sql } from 'kysely';
import pg from 'pg';
import { loadConfig } from '../src/config.ts';
import { migrate, openDatabase } from '../src/db/database.ts';
import { startService } from './lib.ts';

const ENTRIES = Number(process.env.SCALE_ENTRIES ?? 1_000_000);
const SECONDS = Number(process.env.SCALE_SECONDS ?? 10);
const SERVER = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nonsense-scale-'));
const sqliteFile = path.join(dir, 'scale.db');
const pgName = `nonsense_scale_${Date.now()}`;
const pgUrl = Object.assign(new URL(SERVER), { pathname: `/${pgName}` }).href;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function seed(url: string): Promise<number> {
  const started = Date.now();
  const database = await openDatabase(loadConfig({ DATABASE_URL: url }).database);
  await migrate(database);
  const db = database.db;
  // Generated in the database itself: a million single inserts would measure the client, not the engine.
  if (database.quirks.engine === 'postgres') {
    await sql`insert into entries (uuid, text, text_key, created_at, state, updated_at)
      select gen_random_uuid()::text, 'Entry ' || n || ': a sock went missing and came back wiser.',
             'entry ' || n || ': a sock went missing and came back wiser.', 1500000000 + n, 'visible', 0
      from generate_series(1, ${ENTRIES}) as n`.execute(db);
    await sql`analyze entries`.execute(db);
  } else {
    await sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < ${ENTRIES})
      insert into entries (uuid, text, text_key, created_at, state, updated_at)
      select lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-a' ||
             substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6))),
             'Entry ' || i || ': a sock went missing and came back wiser.',
             'entry ' || i || ': a sock went missing and came back wiser.', 1500000000 + i, 'visible', 0 from n`.execute(db);
  }
  await sql`update meta set value = value + 1 where key = 'revision'`.execute(db);
  await database.close();
  return (Date.now() - started) / 1000;
}

async function sampleUuids(url: string): Promise<string[]> {
  const database = await openDatabase(loadConfig({ DATABASE_URL: url }).database);
  const step = Math.max(1, Math.floor(ENTRIES / 1000));
  const rows = await database.db.selectFrom('entries').select('uuid').where(sql<boolean>`created_at % ${step} = 0`).limit(1000).execute();
  await database.close();
  return rows.map((r) => r.uuid);
}

function peakRssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+)/.exec(status)![1]) / 1024;
}

async function rps(base: string, paths: string[]): Promise<string> {
  let i = 0;
  const result = await autocannon({ url: base, connections: 20, duration: SECONDS, requests: [{ setupRequest: (req) => ({ ...req, path: paths[i++ % paths.length]! }) }] });
  return `${result.requests.average.toFixed(0)} req/s (p99 ${result.latency.p99} ms, ${result.errors + result.non2xx} errors)`;
}

async function exportTime(base: string): Promise<string> {
  const started = Date.now();
  const res = await fetch(`${base}/api/v1/nonsense?format=csv`);
  let bytes = 0;
  for await (const chunk of res.body!) bytes += (chunk as Uint8Array).byteLength;
  return `${((Date.now() - started) / 1000).toFixed(1)} s for ${(bytes / 1e6).toFixed(0)} MB`;
}

async function measure(label: string, url: string, port: number, uuids: string[]) {
  const service = await startService({ DATABASE_URL: url, PORT: String(port), LOG_LEVEL: 'warn', RATE_LIMIT_READ: 'off' }, '/readyz');
  const base = `http://127.0.0.1:${port}`;
  const idle = peakRssMb(service.pid);
  await fetch(`${base}/api/v1/nonsense/random`); // builds the id list once
  const row = {
    engine: label,
    random: await rps(base, ['/api/v1/nonsense/random']),
    byUuid: await rps(base, uuids.map((u) => `/api/v1/nonsense/${u}`)),
    exportCsv: await exportTime(base),
    rss: `${idle.toFixed(0)} MB at start, ${peakRssMb(service.pid).toFixed(0)} MB peak`,
  };
  await service.stop();
  return row;
}

const admin = new pg.Client({ connectionString: SERVER });
await admin.connect();
await admin.query(`create database ${pgName}`);
const rows = [];
try {
  console.log(`seeding ${ENTRIES} entries: SQLite ${(await seed(sqliteFile)).toFixed(0)} s, PostgreSQL ${(await seed(pgUrl)).toFixed(0)} s`);
  rows.push(await measure('SQLite, 1 instance', sqliteFile, 18401, await sampleUuids(sqliteFile)));
  const pgUuids = await sampleUuids(pgUrl);
  rows.push(await measure('PostgreSQL, 1 instance', pgUrl, 18402, pgUuids));

  const runDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nonsense-scale-cluster-'));
  const cluster = spawn('scripts/cluster.sh', [], {
    env: { ...process.env, DATABASE_URL: pgUrl, PORT: '18410', RUN_DIR: runDir, RATE_LIMIT_READ: 'off' },
    stdio: ['ignore', 'pipe', 'inherit'],
    detached: true,
  });
  let out = '';
  cluster.stdout.on('data', (c) => (out += c));
  while (!out.includes('cluster ready')) await sleep(100);
  const base = 'http://127.0.0.1:18410';
  for (let i = 0; i < 3; i++) await fetch(`${base}/api/v1/nonsense/random`);
  rows.push({
    engine: 'PostgreSQL, 3 instances behind nginx',
    random: await rps(base, ['/api/v1/nonsense/random']),
    byUuid: await rps(base, pgUuids.map((u) => `/api/v1/nonsense/${u}`)),
    exportCsv: await exportTime(base),
    rss: '',
  });
  process.kill(-cluster.pid!, 'SIGTERM');
  await sleep(1500);
  fs.rmSync(runDir, { recursive: true, force: true });
} finally {
  await admin.query(`drop database if exists ${pgName} with (force)`);
  await admin.end();
  fs.rmSync(dir, { recursive: true, force: true });
}
console.log(`\n${ENTRIES} entries, ${SECONDS} s per measurement, 20 connections, ${os.cpus().length} cores`);
console.log('| setup | random | by UUID | full CSV export | serving process RSS |');
console.log('|---|---|---|---|---|');
for (const r of rows) console.log(`| ${r.engine} | ${r.random} | ${r.byUuid} | ${r.exportCsv} | ${r.rss} |`);
