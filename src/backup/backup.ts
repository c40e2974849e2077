/**
 * `nonsense backup FILE`: everything the service knows, in one file (see `format.ts`). It reads one
 * consistent snapshot of the database without blocking writers (a running service goes on serving
 * and writing), page by page, so memory does not grow with the database, and writes through a
 * stream (gzip when FILE ends in `.gz`).
 *
 * The file holds every token hash and hidden entry, so it is written as a secret: into a new file of
 * its own next to FILE (created exclusively under a random name, so never through a file or link
 * that is already there), readable by its owner only (0600), flushed to disk, and then moved to FILE,
 * which thus appears only once it is complete. An existing FILE is never replaced without `force`.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import type { Kysely } from 'kysely';
import type { Database } from '../db/database.ts';
import type { DB } from '../db/schema.ts';
import { FORMAT_NAME, FORMAT_VERSION, KINDS, zeroCounts, type Counts, type DataRecord, type HeaderRecord } from './format.ts';

/** Rows read per query; small rows (entries, log) come in pages of this many. */
const PAGE = 2000;
/** Emojis hold images of up to 256 KiB: fewer per page. */
const EMOJI_PAGE = 32;

export interface BackupOptions {
  /** Replace FILE when it exists (otherwise that is an error). */
  force?: boolean;
  /** Called now and then with the records written so far and the total. */
  onProgress?: (written: number, total: number) => void;
}

export interface BackupResult {
  counts: Counts;
  bytes: number;
}

/** BackupError: the backup cannot be written where asked; the message says why. */
export class BackupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BackupError';
  }
}

async function countAll(db: Kysely<DB>): Promise<Counts> {
  const tables: Record<(typeof KINDS)[number], keyof DB> = {
    variable: 'variables',
    emoji: 'emojis',
    entry: 'entries',
    report: 'reports',
    token: 'tokens',
    log: 'moderation_log',
  };
  const counts = zeroCounts();
  for (const kind of KINDS) {
    const { count } = await db
      .selectFrom(tables[kind])
      .select((eb) => eb.fn.countAll<number | string>().as('count'))
      .executeTakeFirstOrThrow();
    counts[kind] = Number(count);
  }
  return counts;
}

async function header(db: Kysely<DB>, engine: HeaderRecord['engine']): Promise<HeaderRecord> {
  const revision = await db.selectFrom('meta').select('value').where('key', '=', 'revision').executeTakeFirstOrThrow();
  const migrations = await db
    .selectFrom('kysely_migration' as never)
    .select('name' as never)
    .orderBy('name' as never)
    .execute();
  return {
    type: 'header',
    format: FORMAT_NAME,
    version: FORMAT_VERSION,
    created: Math.floor(Date.now() / 1000),
    engine,
    migrations: (migrations as { name: string }[]).map((m) => m.name),
    revision: Number(revision.value),
    counts: await countAll(db),
  };
}

/** records walks every table of the snapshot in file order, a page at a time, as data records. */
async function* records(db: Kysely<DB>): AsyncGenerator<DataRecord[]> {
  // Variables are few and small: one query.
  const variables = await db.selectFrom('variables').selectAll().orderBy('name').execute();
  if (variables.length > 0) {
    yield variables.map((v) => ({ type: 'variable', name: v.name, description: v.description, values: JSON.parse(v.values_json) as string[], updated_at: Number(v.updated_at) }));
  }
  for (let after: string | undefined; ; ) {
    let query = db.selectFrom('emojis').selectAll().orderBy('name').limit(EMOJI_PAGE);
    if (after !== undefined) query = query.where('name', '>', after);
    const rows = await query.execute();
    if (rows.length === 0) break;
    yield rows.map((e) => ({
      type: 'emoji',
      name: e.name,
      content_type: e.content_type,
      image: Buffer.from(e.image.buffer, e.image.byteOffset, e.image.byteLength).toString('base64'),
      sha256: e.sha256,
      updated_at: Number(e.updated_at),
    }));
    after = rows.at(-1)!.name;
  }
  for (let after = 0; ; ) {
    const rows = await db.selectFrom('entries').select(['id', 'uuid', 'text', 'state', 'created_at', 'updated_at']).where('id', '>', after).orderBy('id').limit(PAGE).execute();
    if (rows.length === 0) break;
    yield rows.map((e) => ({ type: 'entry', id: e.id, uuid: e.uuid, text: e.text, state: e.state, created_at: Number(e.created_at), updated_at: Number(e.updated_at) }));
    after = rows.at(-1)!.id;
  }
  for (let after: string | undefined; ; ) {
    let query = db.selectFrom('reports').selectAll().orderBy('id').limit(PAGE);
    if (after !== undefined) query = query.where('id', '>', after);
    const rows = await query.execute();
    if (rows.length === 0) break;
    yield rows.map((r) => ({
      type: 'report',
      id: r.id,
      entry_uuid: r.entry_uuid,
      reason: r.reason,
      details: r.details,
      status: r.status,
      created_at: Number(r.created_at),
      resolved_at: r.resolved_at === null ? null : Number(r.resolved_at),
      resolved_by: r.resolved_by,
    }));
    after = rows.at(-1)!.id;
  }
  for (let after = 0; ; ) {
    const rows = await db.selectFrom('tokens').selectAll().where('id', '>', after).orderBy('id').limit(PAGE).execute();
    if (rows.length === 0) break;
    yield rows.map((t) => ({ type: 'token', id: t.id, label: t.label, hash: t.hash, created_at: Number(t.created_at), revoked_at: t.revoked_at === null ? null : Number(t.revoked_at) }));
    after = rows.at(-1)!.id;
  }
  for (let after = 0; ; ) {
    const rows = await db.selectFrom('moderation_log').selectAll().where('id', '>', after).orderBy('id').limit(PAGE).execute();
    if (rows.length === 0) break;
    yield rows.map((l) => ({ type: 'log', id: l.id, at: Number(l.at), actor: l.actor, action: l.action, target: l.target, details: l.details }));
    after = rows.at(-1)!.id;
  }
}

/** exists tells whether anything is at `file`, a link that leads nowhere included. */
function exists(file: string): boolean {
  try {
    return fs.lstatSync(file, { throwIfNoEntry: false }) !== undefined;
  } catch (error) {
    // A path through a file: nothing can be there, and creating the file says why.
    if ((error as NodeJS.ErrnoException).code === 'ENOTDIR') return false;
    throw error;
  }
}

const existsAlready = (file: string) => new BackupError(`${file} exists already; choose another name, or pass --force to replace it`);

/** cannotWrite turns the errors of creating or moving the file into a BackupError naming it, or returns undefined. */
function cannotWrite(file: string, error: unknown): BackupError | undefined {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOENT' || code === 'ENOTDIR') return new BackupError(`${file} cannot be written: its folder does not exist`);
  if (code === 'EISDIR') return new BackupError(`${file} cannot be written: it is a folder`);
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') return new BackupError(`${file} cannot be written: permission denied`);
  return undefined;
}

/**
 * place moves the complete temporary file to `file`. Without `force` it links it there, which fails
 * when anything appeared at `file` meanwhile instead of replacing it; a file system without hard links
 * falls back to the check made at the start. With `force`, a rename replaces what is there (a link is
 * replaced itself, not followed).
 */
function place(temporary: string, file: string, force: boolean): void {
  if (force) {
    fs.renameSync(temporary, file);
    return;
  }
  try {
    fs.linkSync(temporary, file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw existsAlready(file);
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw error;
    if (exists(file)) throw existsAlready(file);
    fs.renameSync(temporary, file);
    return;
  }
  fs.unlinkSync(temporary);
}

/** writeBackup writes the whole database to `file`; see the module comment. */
export async function writeBackup(database: Database, file: string, options: BackupOptions = {}): Promise<BackupResult> {
  const force = options.force === true;
  if (!force && exists(file)) throw existsAlready(file);
  const temporary = path.join(path.dirname(file), `${path.basename(file)}.${randomBytes(8).toString('hex')}.partial`);
  let fd: number;
  try {
    // wx: O_CREAT | O_EXCL, which fails on anything already at the name, a symbolic link included.
    fd = fs.openSync(temporary, 'wx', 0o600);
  } catch (error) {
    throw cannotWrite(file, error) ?? error;
  }
  const output = fs.createWriteStream(temporary, { fd, flush: true });
  let counts = zeroCounts();
  let bytes: number;
  try {
    await database.quirks.readSnapshot(database.db, async (db) => {
      const head = await header(db, database.quirks.engine);
      const total = KINDS.reduce((sum, kind) => sum + head.counts[kind], 0);
      let reported = 0;
      async function* lines(): AsyncGenerator<string> {
        yield `${JSON.stringify(head)}\n`;
        let written = 0;
        for await (const page of records(db)) {
          let chunk = '';
          for (const record of page) {
            chunk += `${JSON.stringify(record)}\n`;
            counts[record.type]++;
          }
          written += page.length;
          if (options.onProgress && Date.now() - reported > 200) {
            reported = Date.now();
            options.onProgress(written, total);
          }
          yield chunk;
        }
        // The snapshot cannot change under the walk; a difference would be a bug, never a half backup.
        for (const kind of KINDS) {
          if (counts[kind] !== head.counts[kind]) throw new Error(`Backup walk found ${counts[kind]} ${kind} records, the count said ${head.counts[kind]}`);
        }
        yield `${JSON.stringify({ type: 'end', counts })}\n`;
        options.onProgress?.(written, total);
      }
      await (file.endsWith('.gz') ? pipeline(Readable.from(lines()), zlib.createGzip(), output) : pipeline(Readable.from(lines()), output));
    });
    bytes = output.bytesWritten;
    place(temporary, file, force);
  } catch (error) {
    output.destroy();
    fs.rmSync(temporary, { force: true });
    counts = zeroCounts();
    if (error instanceof BackupError) throw error;
    throw cannotWrite(file, error) ?? error;
  }
  return { counts, bytes };
}
