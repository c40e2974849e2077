/**
 * `nonsense backup` and `nonsense restore` with a large database (1,000,000 entries by default, 1 in
 * 100 hidden, plus reports, tokens and log records), on SQLite and on PostgreSQL: the time, the file
 * size (plain and gzip) and the peak RSS of the command. Each is set against a baseline of the same
 * run on the same machine: the backup against `nonsense export` (CSV) of the same database, the
 * restore against the seeding of the same rows by SQL inside the engine (no client at all).
 *
 *   npm run bench:backup                        # needs PostgreSQL (TEST_POSTGRES_URL)
 *   BACKUP_ENTRIES=200000 npm run bench:backup
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { loadConfig } from '../src/config.ts';
import { migrate, openDatabase } from '../src/db/database.ts';

const ENTRIES = Number(process.env.BACKUP_ENTRIES ?? 1_000_000);
const SERVER = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nonsense-backup-bench-'));
const stamp = Date.now();
const created: string[] = [];

/** A database URL for `name`: a file in the bench folder, or a new PostgreSQL database. */
async function newDatabase(engine: 'sqlite' | 'postgres', name: string): Promise<string> {
  if (engine === 'sqlite') return path.join(dir, `${name}.db`);
  const database = `nonsense_bench_${name}_${stamp}`;
  const admin = new pg.Client({ connectionString: SERVER });
  await admin.connect();
  await admin.query(`create database ${database}`);
  await admin.end();
  created.push(database);
  return Object.assign(new URL(SERVER), { pathname: `/${database}` }).href;
}

/** seed fills a database inside the engine (as bench/scale.ts does) and returns the seconds it took. */
async function seed(url: string): Promise<number> {
  const database = await openDatabase(loadConfig({ DATABASE_URL: url }).database);
  await migrate(database);
  const db = database.db;
  const started = performance.now();
  if (database.quirks.engine === 'postgres') {
    await sql`insert into entries (uuid, text, text_key, created_at, state, updated_at)
      select gen_random_uuid()::text, 'Entry ' || n || ': a sock went missing and came back wiser.',
             'entry ' || n || ': a sock went missing and came back wiser.', 1500000000 + n,
             case when n % 100 = 0 then 'hidden' else 'visible' end, 1700000000000
      from generate_series(1, ${ENTRIES}) as n`.execute(db);
  } else {
    await sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < ${ENTRIES})
      insert into entries (uuid, text, text_key, created_at, state, updated_at)
      select lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-a' ||
             substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6))),
             'Entry ' || i || ': a sock went missing and came back wiser.',
             'entry ' || i || ': a sock went missing and came back wiser.', 1500000000 + i,
             case when i % 100 = 0 then 'hidden' else 'visible' end, 1700000000000 from n`.execute(db);
  }
  // Statistics, as a restore leaves them (and as autovacuum would, given time).
  await database.quirks.refreshStatistics(db);
  const seconds = (performance.now() - started) / 1000;
  // A little of everything else, so the backup carries every kind of record.
  const hidden = await db.selectFrom('entries').select('uuid').where('state', '=', 'hidden').limit(1000).execute();
  await db
    .insertInto('reports')
    .values(hidden.map((e, i) => ({ id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, entry_uuid: e.uuid, reason: 'other', details: null, status: 'accepted' as const, created_at: 1700000000000 + i, resolved_at: 1700000001000 + i, resolved_by: 'bench' })))
    .execute();
  await db
    .insertInto('moderation_log')
    .values(hidden.map((e, i) => ({ at: 1700000001000 + i, actor: 'bench', action: 'report.accept', target: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, details: JSON.stringify({ entry: e.uuid }) })))
    .execute();
  await db.insertInto('tokens').values({ label: 'bench', hash: 'a'.repeat(64), created_at: 1700000000000, revoked_at: null }).execute();
  await sql`update meta set value = value + 1 where key = 'revision'`.execute(db);
  await database.close();
  return seconds;
}

interface Run {
  seconds: number;
  maxRssMb: number;
}

/** nonsense runs the command line, writing stdout to `stdout` when given, and measures it. */
async function nonsense(args: string[], url: string, stdout?: string): Promise<Run> {
  // The child reports its own peak RSS when it exits.
  const report = "process.on('exit', () => process.stderr.write('maxrss=' + process.resourceUsage().maxRSS + '\\n'))";
  const started = performance.now();
  const child = spawn(process.execPath, ['--import', `data:text/javascript,${encodeURIComponent(report)}`, 'bin/nonsense.js', ...args], {
    env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'warn' },
    stdio: ['ignore', stdout ? fs.openSync(stdout, 'w') : 'inherit', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  const seconds = (performance.now() - started) / 1000;
  if (code !== 0) throw new Error(`nonsense ${args.join(' ')} failed:\n${stderr}`);
  return { seconds, maxRssMb: Number(/maxrss=(\d+)/.exec(stderr)?.[1] ?? 0) / 1024 };
}

const mb = (file: string) => fs.statSync(file).size / 1e6;
const rows: string[] = [];

try {
  for (const engine of ['sqlite', 'postgres'] as const) {
    const source = await newDatabase(engine, 'source');
    const seeded = await seed(source);
    const csv = path.join(dir, `${engine}.csv`);
    const exported = await nonsense(['export', '--format', 'csv'], source, csv);
    const plain = path.join(dir, `${engine}.jsonl`);
    const backup = await nonsense(['backup', plain], source);
    const gz = path.join(dir, `${engine}.jsonl.gz`);
    const backupGz = await nonsense(['backup', gz], source);
    const restore = await nonsense(['restore', plain], await newDatabase(engine, 'restored'));
    const restoreGz = await nonsense(['restore', gz], await newDatabase(engine, 'restoredgz'));
    rows.push(
      `| ${engine} | ${backup.seconds.toFixed(1)} s, ${mb(plain).toFixed(0)} MB, ${backup.maxRssMb.toFixed(0)} MB RSS ` +
        `| ${backupGz.seconds.toFixed(1)} s, ${mb(gz).toFixed(0)} MB | ${exported.seconds.toFixed(1)} s, ${mb(csv).toFixed(0)} MB, ${exported.maxRssMb.toFixed(0)} MB RSS ` +
        `| ${(backup.seconds / exported.seconds).toFixed(2)} ` +
        `| ${restore.seconds.toFixed(1)} s, ${restore.maxRssMb.toFixed(0)} MB RSS | ${restoreGz.seconds.toFixed(1)} s | ${seeded.toFixed(1)} s | ${(restore.seconds / seeded).toFixed(2)} |`,
    );
    console.log(rows.at(-1));
    for (const file of [csv, plain, gz]) fs.rmSync(file, { force: true });
  }
  console.log(`\n${ENTRIES.toLocaleString('en')} entries (1 in 100 hidden), 1,000 reports and log records, 1 token; ${os.cpus().length} cores\n`);
  console.log('| engine | backup (plain) | backup (.gz) | baseline: export CSV | backup / export | restore (plain) | restore (.gz) | baseline: seed by SQL | restore / seed |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const row of rows) console.log(row);
} finally {
  const admin = new pg.Client({ connectionString: SERVER });
  await admin.connect();
  for (const name of created) await admin.query(`drop database if exists ${name} with (force)`);
  await admin.end();
  fs.rmSync(dir, { recursive: true, force: true });
}
