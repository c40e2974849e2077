/**
 * Backup and restore between the engines. A SQLite database with every kind of data (entries in every
 * state, variables, emojis, reports in every status, active and revoked tokens, the moderation log) is
 * backed up and restored into PostgreSQL, and the PostgreSQL one, changed further, back into a new
 * SQLite file; each time the two services answer every public and admin GET alike, byte for byte.
 * Also: all or nothing on a bad, cut-off or misplaced file, refusal of a non-empty database, and a
 * consistent snapshot that does not block writers.
 *
 * It needs both engines at once, so it runs in the SQLite project only and creates its PostgreSQL
 * databases itself. Without PostgreSQL it is skipped with a warning, except under CI=true, where it fails.
 */
import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { writeBackup } from '../../src/backup/backup.ts';
import { RestoreError, restoreBackup } from '../../src/backup/restore.ts';
import { loadConfig } from '../../src/config.ts';
import { migrate, openDatabase, type Database } from '../../src/db/database.ts';
import { DEMO_DIR, loadDemo } from '../../src/demo/load-demo.ts';
import { GalaxyComputer } from '../../src/services/galaxy/compute.ts';
import { createStorage, type Storage } from '../../src/storage/index.ts';
import { checkAnswersAgainstDocument, tempDir } from '../helper.ts';
import { postgresAnswers, TEST_POSTGRES_URL as POSTGRES_URL } from '../postgres.ts';
import { mulberry32 } from '../seeded-random.ts';

const HAVE_POSTGRES = await postgresAnswers();
const MUST_RUN = process.env.CI === 'true';
if (!HAVE_POSTGRES && !MUST_RUN) {
  console.warn(`\n*** PostgreSQL does not answer at ${POSTGRES_URL.replace(/:[^:@/]*@/, ':***@')}: the backup tests between engines are SKIPPED. ***\n`);
}

interface Side {
  database: Database;
  storage: Storage;
  app: FastifyInstance;
  close(): Promise<void>;
}

const created: string[] = [];

/** newDatabase makes an empty database: a file in `dir`, or a new PostgreSQL database. */
async function newDatabase(engine: 'sqlite' | 'postgres', dir: string, name: string): Promise<string> {
  if (engine === 'sqlite') return path.join(dir, `${name}.db`);
  const database = `nonsense_backup_${process.pid}_${name}_${Date.now()}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  await admin.query(`create database ${database}`);
  await admin.end();
  created.push(database);
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${database}`;
  return url.href;
}

/** open opens a database (migrating it) with the service on top, as production builds it. */
async function open(url: string): Promise<Side> {
  const config = loadConfig({ DATABASE_URL: url, LOG_LEVEL: 'silent', RATE_LIMIT_READ: 'off', RATE_LIMIT_IMAGE: 'off', RATE_LIMIT_REPORT: 'off', OVERLOAD_MAX_EVENT_LOOP_DELAY: 'off' });
  const database = await openDatabase(config.database);
  await migrate(database);
  const storage = createStorage(database, { revisionMaxAgeMs: 0 });
  const app = await buildApp({ config, storage, logger: false });
  await app.ready();
  await checkAnswersAgainstDocument(app);
  return {
    database,
    storage,
    app,
    close: async () => {
      await app.close();
      await database.close();
    },
  };
}

interface Seeded {
  token: string;
  visible: string[];
  hidden: string[];
  deleted: string;
}

/** allEntries lists every entry in any state, in uuid order. */
async function allEntries(storage: Storage): Promise<{ uuid: string; state: 'visible' | 'hidden' }[]> {
  return storage.database.db.selectFrom('entries').select(['uuid', 'state']).orderBy('uuid').execute();
}

/** seed fills a database with every kind of data the service keeps, through the storage layer. */
async function seed(storage: Storage): Promise<Seeded> {
  await loadDemo(storage);
  const token = (await storage.tokens.create('alice'))!;
  await storage.tokens.create('bob');
  await storage.tokens.revoke('bob');
  const all = (await allEntries(storage)).map((e) => e.uuid);
  const [reportedA, reportedB, reportedC, hiddenByHand, edited, deleted] = all;
  const a = (await storage.reports.create(reportedA!, 'duplicate', null))!;
  await storage.reports.create(reportedA!, 'other', 'Seen it twice, "really".');
  const b = (await storage.reports.create(reportedB!, 'hate_speech', 'Not nice.'))!;
  await storage.reports.create(reportedC!, 'personal_information', null);
  await storage.reports.accept(a.id, 'alice');
  await storage.reports.dismiss(b.id, 'alice');
  await storage.entries.update(hiddenByHand!, { state: 'hidden' }, 'alice');
  await storage.entries.update(edited!, { text: 'An edited entry: the $ANIMAL$ rewrote it, $AUTHOR$.' }, 'alice');
  await storage.entries.remove(deleted!, 'alice');
  await storage.entries.create(`A long one: ${'nonsense '.repeat(220)}`.trim().slice(0, 2000), 1_750_000_000, 'alice');
  await storage.entries.create('Two lines,\nand ünïcödé 🦆 with ${app_name} and :toast:', 1_750_000_001, 'alice');
  await storage.variables.put({ name: '$COLOUR$', description: 'A colour', values: ['teal', 'mauve', 'ochre'] }, 'alice');
  await storage.emojis.put('toast_again', 'image/png', new Uint8Array(fs.readFileSync(path.join(DEMO_DIR, 'emojis', 'toast.png'))), 'alice');
  const states = await allEntries(storage);
  return {
    token,
    visible: states.filter((e) => e.state === 'visible').map((e) => e.uuid),
    hidden: states.filter((e) => e.state === 'hidden').map((e) => e.uuid),
    deleted: deleted!,
  };
}

/** Every public and admin GET whose answer is fully determined by the data. */
function requests(s: Seeded): string[] {
  const [v1, v2, v3] = s.visible;
  const [h1] = s.hidden;
  return [
    '/api/v1/nonsense/status',
    '/api/v1/nonsense',
    '/api/v1/nonsense?format=json',
    '/api/v1/nonsense?format=txt',
    '/api/v1/nonsense?format=csv&q=the&after=1600000000',
    '/api/v1/nonsense?format=json&before=1700000000',
    `/api/v1/nonsense/${v1}`,
    `/api/v1/nonsense/${v2}`,
    `/api/v1/nonsense/${h1}`,
    `/api/v1/nonsense/${s.deleted}`,
    `/api/v1/nonsense/${v3}.png`,
    '/api/v1/variables',
    '/api/v1/emojis',
    '/api/v1/emojis/toast.png',
    '/api/v1/emojis/toast_again.png',
    '/api/v1/nonsense/galaxy',
    '/api/v1/nonsense/galaxy?format=json',
    '/odata/v2/',
    '/odata/v2/$metadata',
    '/odata/v2/nonsense_list',
    '/odata/v2/nonsense_list?$format=json&$inlinecount=allpages&$top=50&$skip=10',
    "/odata/v2/nonsense_list?$filter=substringof('goose',nonsense)&$format=json",
    '/odata/v2/nonsense_list?$orderby=timestamp desc&$top=20',
    '/odata/v2/nonsense_list/$count',
    `/odata/v2/nonsense_list(guid'${v2}')`,
    '/openapi.json',
    '/healthz',
    '/readyz',
    '/search',
    '/search?q=goose',
    '/search?from=2023-01-01&to=2024-12-31',
    `/nonsense/${v1}`,
    `/nonsense/${v1}/report`,
    `/nonsense/${h1}`,
    '/admin',
    '/api/v1/admin/reports',
    '/api/v1/admin/reports?status=accepted',
    '/api/v1/admin/reports?status=dismissed',
    '/api/v1/admin/nonsense',
    '/api/v1/admin/nonsense?state=hidden',
    '/api/v1/admin/nonsense?q=edited',
    '/api/v1/admin/nonsense?limit=7',
    `/api/v1/admin/nonsense/${h1}`,
    '/api/v1/admin/log',
    '/api/v1/admin/log?limit=3&before=6',
  ];
}

interface Answer {
  status: number;
  type: unknown;
  etag: unknown;
  link: unknown;
  body: string;
}

async function answer(app: FastifyInstance, url: string, token: string): Promise<Answer> {
  vi.spyOn(Math, 'random').mockImplementation(mulberry32(42));
  const res = await app.inject({ url, headers: { authorization: `Bearer ${token}`, host: 'nonsense.test' } });
  vi.mocked(Math.random).mockRestore();
  const binary = !/^(text|application)\//.test(String(res.headers['content-type']));
  return {
    status: res.statusCode,
    type: res.headers['content-type'],
    etag: res.headers.etag,
    link: res.headers.link,
    body: binary ? `sha256:${createHash('sha256').update(res.rawPayload).digest('hex')}` : res.body,
  };
}

let fitClock = 1_735_786_800_000;

/**
 * expectSameAnswers asks both services every request and expects the same status, headers that
 * matter and body. The galaxy is derived data, not in a backup: each side lays it out anew first
 * (seeded, so the same entries give the same layout, numbered alike) and serves it before comparing.
 */
async function expectSameAnswers(a: Side, b: Side, s: Seeded) {
  // A new fit number for every comparison, as a real clock would give (a service keeps serving a fit it knows).
  fitClock += 60_000;
  for (const side of [a, b]) {
    await side.database.db.deleteFrom('galaxy_points').execute();
    await side.database.db.deleteFrom('galaxy_layout').execute();
    // The fit is numbered from the clock and a random draw: the same for both.
    vi.spyOn(Math, 'random').mockImplementation(mulberry32(7));
    try {
      await new GalaxyComputer(side.database, { now: () => fitClock }).run({ refit: true });
    } finally {
      vi.mocked(Math.random).mockRestore();
    }
    // A service keeps serving the layout it holds until it has read the new one (a moment later).
    const layout = (await side.storage.galaxy.layout())!;
    await expect
      .poll(async () => (await side.app.inject('/api/v1/nonsense/galaxy')).headers.etag, { timeout: 10_000 })
      .toMatch(new RegExp(`^"galaxy-${layout.revision}\\.${layout.version}-`));
  }
  // The OData feed states the time it was written: the same clock for both (a minute later each time,
  // so the services' once-a-second re-reads happen between comparisons).
  vi.useFakeTimers({ toFake: ['Date'], now: fitClock });
  try {
    for (const url of requests(s)) {
      const [left, right] = [await answer(a.app, url, s.token), await answer(b.app, url, s.token)];
      expect(right, url).toEqual(left);
      // Hidden and deleted entries are 404 on the public side; everything else answers, admin included.
      const gone = [s.hidden[0], s.deleted].some((uuid) => url === `/api/v1/nonsense/${uuid}` || url === `/nonsense/${uuid}`);
      expect(left.status, url).toBe(gone ? 404 : 200);
    }
    // Random picks depend on the engine's row order; both give a visible entry.
    for (const side of [a, b]) {
      const random = (await side.app.inject('/api/v1/nonsense/random')).json() as { uuid: string };
      expect(s.visible).toContain(random.uuid);
      expect((await side.app.inject('/')).statusCode).toBe(200);
    }
  } finally {
    vi.useRealTimers();
  }
}

async function rowCount(database: Database): Promise<number> {
  let total = 0;
  for (const table of ['entries', 'variables', 'emojis', 'reports', 'tokens', 'moderation_log'] as const) {
    const { count } = await database.db.selectFrom(table).select((eb) => eb.fn.countAll<number | string>().as('count')).executeTakeFirstOrThrow();
    total += Number(count);
  }
  return total;
}

describe.skipIf(!HAVE_POSTGRES && !MUST_RUN)('backup and restore between SQLite and PostgreSQL', () => {
  let dir: string;
  const sides: Side[] = [];
  let source: Side;
  let seeded: Seeded;
  let restoredOnPostgres: Side;

  beforeAll(async () => {
    if (!HAVE_POSTGRES) {
      throw new Error(`PostgreSQL does not answer at ${POSTGRES_URL.replace(/:[^:@/]*@/, ':***@')}, and CI=true: the backup tests need both engines. Start PostgreSQL or set TEST_POSTGRES_URL.`);
    }
    dir = tempDir();
    source = await open(await newDatabase('sqlite', dir, 'source'));
    sides.push(source);
    seeded = await seed(source.storage);
  }, 60_000);

  afterAll(async () => {
    for (const side of sides) await side.close().catch(() => {});
    if (created.length > 0) {
      const admin = new pg.Client({ connectionString: POSTGRES_URL });
      await admin.connect();
      for (const name of created) await admin.query(`drop database if exists ${name} with (force)`);
      await admin.end();
    }
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('SQLite → backup → PostgreSQL answers every public and admin GET alike, and the token still works', async () => {
    const file = path.join(dir, 'sqlite.jsonl');
    const written = await writeBackup(source.database, file);
    expect(written.counts).toMatchObject({ variable: 6, emoji: 6, report: 4, token: 2 });
    expect(written.counts.log).toBeGreaterThanOrEqual(9);
    expect(written.counts.entry).toBe(seeded.visible.length + seeded.hidden.length);

    const target = await open(await newDatabase('postgres', dir, 'target'));
    sides.push(target);
    restoredOnPostgres = target;
    const restored = await restoreBackup(target.database, file);
    expect(restored.counts).toEqual(written.counts);
    expect(restored.header.engine).toBe('sqlite');
    await expectSameAnswers(source, target, seeded);
    // The ids continue after the restored ones: new rows on the restored database fit in.
    expect('entry' in (await target.storage.entries.create('Added after the restore', 1_760_000_000, 'alice'))).toBe(true);
    expect(await target.storage.tokens.create('carol')).toMatch(/^nst_/);
    const added = await target.database.db.selectFrom('entries').select('uuid').where('text', '=', 'Added after the restore').executeTakeFirstOrThrow();
    await target.storage.entries.remove(added.uuid, 'alice');
  }, 120_000);

  it('PostgreSQL, changed further → gzip backup → SQLite answers alike too', async () => {
    const pgSide = restoredOnPostgres;
    // Changes made on PostgreSQL only: a report resolved, an entry shown again, a variable removed.
    const [pending] = await pgSide.storage.reports.list('open');
    await pgSide.storage.reports.accept(pending!.id, 'carol');
    await pgSide.storage.entries.update(seeded.hidden.at(-1)!, { state: 'visible' }, 'carol');
    await pgSide.storage.variables.remove('$COLOUR$', 'carol');
    const states = await allEntries(pgSide.storage);
    const now: Seeded = {
      ...seeded,
      visible: states.filter((e) => e.state === 'visible').map((e) => e.uuid),
      hidden: states.filter((e) => e.state === 'hidden').map((e) => e.uuid),
    };

    const file = path.join(dir, 'postgres.jsonl.gz');
    await writeBackup(pgSide.database, file);
    expect(fs.readFileSync(file).subarray(0, 2).toString('hex')).toBe('1f8b');
    const back = await open(await newDatabase('sqlite', dir, 'back'));
    sides.push(back);
    const restored = await restoreBackup(back.database, file);
    expect(restored.header.engine).toBe('postgres');
    await expectSameAnswers(pgSide, back, now);
    // The same records both ways: a backup of the copy equals the backup of the original, header aside.
    const again = path.join(dir, 'again.jsonl');
    await writeBackup(back.database, again);
    const records = (text: string) => text.split('\n').slice(1).join('\n');
    expect(records(fs.readFileSync(again, 'utf8'))).toBe(records(zlib.gunzipSync(fs.readFileSync(file)).toString('utf8')));
  }, 120_000);

  it('refuses a database that is not empty, and changes nothing in it', async () => {
    const file = path.join(dir, 'sqlite.jsonl');
    const before = await rowCount(source.database);
    await expect(restoreBackup(source.database, file)).rejects.toThrow(/the database of DATABASE_URL is not empty \(it holds 6 variables, 6 emojis, \d+ entries, 4 reports, 2 tokens, \d+ moderation log records\)/);
    expect(await rowCount(source.database)).toBe(before);
  });

  it.each(['sqlite', 'postgres'] as const)('restores all or nothing on %s: cut-off, damaged or misordered files write nothing', async (engine) => {
    const good = fs.readFileSync(path.join(dir, 'sqlite.jsonl'), 'utf8').split('\n');
    const entryLine = good.findIndex((line) => line.startsWith('{"type":"entry"')) + 40;
    const damaged = [...good];
    damaged[entryLine] = damaged[entryLine]!.replace(/"uuid":"[^"]+"/, '"uuid":"not-a-uuid"');
    const dangling = [...good];
    const reportLine = good.findIndex((line) => line.startsWith('{"type":"report"'));
    dangling[reportLine] = dangling[reportLine]!.replace(/"entry_uuid":"[^"]+"/, '"entry_uuid":"00000000-0000-4000-8000-00000000dead"');
    const gzipped = zlib.gzipSync(good.join('\n'));
    const cases: [string, string | Buffer, RegExp][] = [
      ['cut.jsonl', good.slice(0, -3).join('\n'), /ends before its end record: it is incomplete/],
      ['cut-mid-line.jsonl', good.join('\n').slice(0, 60_000), /line \d+: not valid JSON|ends before its end record/],
      ['damaged.jsonl', damaged.join('\n'), new RegExp(`line ${entryLine + 1}: the entry has no valid "uuid" \\(got "not-a-uuid"\\)`)],
      ['misordered.jsonl', [good[0], good[entryLine], good[1], ...good.slice(2)].join('\n'), /line 3: a variable record after entry records/],
      ['dangling.jsonl', dangling.join('\n'), /lines \d+-\d+ \(report records\) cannot be written/],
      ['miscounted.jsonl', good.filter((_, i) => i !== entryLine).join('\n'), /holds \d+ entry records, but its header and end record say/],
      ['cut.jsonl.gz', gzipped.subarray(0, gzipped.length - 100), /the gzip data is damaged or cut off|ends before its end record/],
      ['other.jsonl', '{"nonsense":"an export, not a backup"}\n', /line 1: this is not a backup made by `nonsense backup`/],
      ['future.jsonl', [good[0]!.replace('"version":1', '"version":2'), ...good.slice(1)].join('\n'), /format version 2; this version of the service reads version 1/],
      ['newer.jsonl', [good[0]!.replace('"0004-long-text-keys"', '"0004-long-text-keys","0099-from-the-future"'), ...good.slice(1)].join('\n'), /made by a newer version of the service \(its schema has 0099-from-the-future\)/],
    ];
    const target = await open(await newDatabase(engine, dir, `atomic_${engine}`));
    sides.push(target);
    for (const [name, content, message] of cases) {
      const file = path.join(dir, name);
      fs.writeFileSync(file, content);
      const error = await restoreBackup(target.database, file).then(() => null, (e: unknown) => e);
      expect(error, name).toBeInstanceOf(RestoreError);
      expect((error as Error).message, name).toMatch(message);
      expect(await rowCount(target.database), name).toBe(0);
    }
    await expect(restoreBackup(target.database, path.join(dir, 'missing.jsonl'))).rejects.toThrow(/missing\.jsonl: there is no such file/);
    // After all that, the good file still restores.
    await restoreBackup(target.database, path.join(dir, 'sqlite.jsonl'));
    expect(await rowCount(target.database)).toBeGreaterThan(300);
  }, 120_000);

  it.each(['sqlite', 'postgres'] as const)('reads one snapshot of %s that writers do not wait for, and backs up a consistent file while they write', async (engine) => {
    const url = await newDatabase(engine, dir, `busy_${engine}`);
    const busy = await open(url);
    const writer = await open(url);
    sides.push(busy, writer);
    const uuid = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
    await busy.storage.entries.insertEntries(Array.from({ length: 9000 }, (_, i) => ({ uuid: uuid(i), text: `Busy entry ${i}`, timestamp: 1_600_000_000 + i })));
    const count = async (db: Database['db']) => Number((await db.selectFrom('entries').select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow()).n);

    // Inside an open snapshot, another connection deletes and adds entries: it does not wait for the
    // snapshot to end (if it did, this would never finish), and the snapshot does not see its changes.
    await busy.database.quirks.readSnapshot(busy.database.db, async (snapshot) => {
      expect(await count(snapshot)).toBe(9000);
      await writer.storage.entries.remove(uuid(0), 'alice');
      await writer.storage.entries.create('Written during the snapshot', 1_700_000_000, 'alice');
      expect(await count(snapshot)).toBe(9000);
      expect(await snapshot.selectFrom('entries').select('uuid').where('uuid', '=', uuid(0)).executeTakeFirst()).toBeDefined();
    });
    expect(await count(busy.database.db)).toBe(9000);

    // A backup while an entry with a report is deleted: the file holds both or neither, so it restores.
    const reported = (await busy.storage.reports.create(uuid(8999), 'other', null))!;
    let writes: Promise<unknown> | undefined;
    const file = path.join(dir, `busy-${engine}.jsonl`);
    const result = await writeBackup(busy.database, file, {
      onProgress: () => {
        writes ??= writer.storage.entries.remove(uuid(8999), 'alice');
      },
    });
    await writes;
    const text = fs.readFileSync(file, 'utf8');
    expect(text.includes(reported.id)).toBe(text.includes(`"uuid":"${uuid(8999)}"`));
    expect(result.counts.entry).toBe(text.includes(reported.id) ? 9000 : 8999);
    const copy = await open(await newDatabase(engine, dir, `busy_copy_${engine}`));
    sides.push(copy);
    expect((await restoreBackup(copy.database, file)).counts).toEqual(result.counts);
  }, 120_000);

  it('the command line: backup refuses to overwrite, restore says what it did and what is wrong', async () => {
    const run = promisify(execFile);
    const BIN = path.resolve('bin/nonsense.js');
    const { BASE_URL: _vite, ...env } = process.env;
    const nonsense = async (args: string[], url: string) => {
      try {
        const { stdout, stderr } = await run(process.execPath, [BIN, ...args], { env: { ...env, DATABASE_URL: url, LOG_LEVEL: 'warn' } });
        return { code: 0, stdout, stderr };
      } catch (error) {
        const e = error as { code: number; stdout: string; stderr: string };
        return { code: e.code, stdout: e.stdout, stderr: e.stderr };
      }
    };
    const sourceUrl = path.join(dir, 'source.db');
    const file = path.join(dir, 'cli.jsonl.gz');
    const made = await nonsense(['backup', file], sourceUrl);
    expect(made.stdout).toMatch(/^Backed up to .*cli\.jsonl\.gz \([\d.]+ MB\): \d+ entries, 6 variables, 6 emojis, 4 reports, 2 tokens and \d+ moderation log records\.\n$/);
    const again = await nonsense(['backup', file], sourceUrl);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(`nonsense: ${file} exists already; choose another name, or pass --force to replace it. No backup was written.\n`);
    expect((await nonsense(['backup', '--force', file], sourceUrl)).code).toBe(0);

    const targetUrl = await newDatabase('postgres', dir, 'cli');
    const restored = await nonsense(['restore', file], targetUrl);
    expect(restored.stdout).toMatch(/^Restored .*cli\.jsonl\.gz \(made .* on sqlite\): \d+ entries, 6 variables, 6 emojis, 4 reports, 2 tokens and \d+ moderation log records\. Revision \d+\.\n$/);
    const refused = await nonsense(['restore', file], targetUrl);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^nonsense: Cannot restore: the database of DATABASE_URL is not empty \(it holds .*\)\. .* Nothing was restored\.\n$/);
  }, 120_000);
});
