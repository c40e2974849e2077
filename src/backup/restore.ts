/**
 * `nonsense restore FILE`: loads a backup (see `format.ts`) into an empty database of either engine,
 * all or nothing: one transaction, refused at once when the database holds anything, and rolled back
 * when any line is wrong or the file ends before its end record. The file is read as a stream (gzip
 * recognised by its first bytes, each line bounded by MAX_LINE_BYTES) and written in batches, so
 * memory does not grow with its size. Every record is checked as the admin API checks the same data
 * (`format.ts`), and texts are written as it would write them (trimmed). Ids, uuids, times, states and
 * token hashes are kept as they were, and the change revision does not go backwards, so clients and
 * caches see the same data under the same revision or a newer one.
 */
import fs from 'node:fs';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';
import type { Insertable, Kysely } from 'kysely';
import type { Database } from '../db/database.ts';
import { MIGRATIONS } from '../db/migrations/index.ts';
import type { DB } from '../db/schema.ts';
import { textKey } from '../domain/text.ts';
import { LineTooLongError, readLines } from '../import/lines.ts';
import { BackupFormatError, KINDS, parseHeader, parseRecord, zeroCounts, type Counts, type DataRecord, type HeaderRecord, type Kind } from './format.ts';

/** RestoreError: the backup cannot be restored here; the message says why, and nothing was written. */
export class RestoreError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RestoreError';
  }
}

export interface RestoreOptions {
  /** Called now and then with the share of the file read, from 0 to 1. */
  onProgress?: (fraction: number) => void;
}

export interface RestoreResult {
  header: HeaderRecord;
  counts: Counts;
  /** The revision the database has now. */
  revision: number;
}

/** Records written per INSERT, by kind: a few thousand bound parameters, far below either engine's limit. */
const BATCH: Record<Kind, number> = { variable: 100, emoji: 16, entry: 1000, report: 500, token: 500, log: 1000 };
/** A line longer than this is no line of a backup (the longest, an emoji, is under 400 kB): 4 MiB. */
export const MAX_LINE_BYTES = 4 * 1024 * 1024;

const TABLES: Record<Kind, keyof DB> = { variable: 'variables', emoji: 'emojis', entry: 'entries', report: 'reports', token: 'tokens', log: 'moderation_log' };

function openBackup(file: string): { input: Readable; raw: fs.ReadStream; size: number } {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new RestoreError(
      `${file}: ${code === 'ENOENT' ? 'there is no such file' : code === 'EACCES' || code === 'EPERM' ? 'this user may not read it (permission denied)' : (error as Error).message}`,
    );
  }
  const stat = fs.fstatSync(fd);
  if (!stat.isFile()) {
    fs.closeSync(fd);
    throw new RestoreError(`${file}: it is not a file`);
  }
  const magic = Buffer.alloc(2);
  fs.readSync(fd, magic, 0, 2, 0);
  const raw = fs.createReadStream(file, { fd, start: 0 });
  // gzip files start with 1f 8b, whatever their name.
  const input = magic[0] === 0x1f && magic[1] === 0x8b ? raw.pipe(zlib.createGunzip()) : raw;
  return { input, raw, size: stat.size };
}

/** What the database holds, as "3 entries, 1 token" (empty string when nothing). */
async function contentsOf(db: Kysely<DB>): Promise<string> {
  const parts: string[] = [];
  const names: Record<Kind, [string, string]> = {
    variable: ['variable', 'variables'],
    emoji: ['emoji', 'emojis'],
    entry: ['entry', 'entries'],
    report: ['report', 'reports'],
    token: ['token', 'tokens'],
    log: ['moderation log record', 'moderation log records'],
  };
  for (const kind of KINDS) {
    const { count } = await db
      .selectFrom(TABLES[kind])
      .select((eb) => eb.fn.countAll<number | string>().as('count'))
      .executeTakeFirstOrThrow();
    if (Number(count) > 0) parts.push(`${Number(count)} ${names[kind][Number(count) === 1 ? 0 : 1]}`);
  }
  return parts.join(', ');
}

/** rowOf is the table row of a record that parseRecord checked. */
function rowOf(record: DataRecord): Insertable<DB[keyof DB]> {
  switch (record.type) {
    case 'variable':
      return { name: record.name, description: record.description, values_json: JSON.stringify(record.values), updated_at: record.updated_at };
    case 'emoji':
      return { name: record.name, content_type: record.content_type, image: new Uint8Array(Buffer.from(record.image, 'base64')), sha256: record.sha256, updated_at: record.updated_at };
    case 'entry':
      return { id: record.id, uuid: record.uuid, text: record.text, text_key: textKey(record.text), created_at: record.created_at, state: record.state, updated_at: record.updated_at };
    case 'report':
      return {
        id: record.id,
        entry_uuid: record.entry_uuid,
        reason: record.reason,
        details: record.details,
        status: record.status,
        created_at: record.created_at,
        resolved_at: record.resolved_at,
        resolved_by: record.resolved_by,
      };
    case 'token':
      return { id: record.id, label: record.label, hash: record.hash, created_at: record.created_at, revoked_at: record.revoked_at };
    case 'log':
      return { id: record.id, at: record.at, actor: record.actor, action: record.action, target: record.target, details: record.details };
  }
}

/** restoreBackup loads `file` into the empty `database`; see the module comment. */
export async function restoreBackup(database: Database, file: string, options: RestoreOptions = {}): Promise<RestoreResult> {
  const { input, raw, size } = openBackup(file);
  let reported = 0;
  try {
    const result = await database.db.transaction().execute(async (trx) => {
      // Checked inside the transaction, so nothing can be written between the check and the restore.
      const present = await contentsOf(trx);
      if (present !== '') {
        throw new RestoreError(
          `the database of DATABASE_URL is not empty (it holds ${present}). A backup is restored only into an empty database: ` +
            'create a new one (a new SQLite file, or `createdb` on PostgreSQL), point DATABASE_URL at it and restore before starting the service there ' +
            '(a new SQLite file gets the demo data on its first start unless DEMO_DATA=off)',
        );
      }
      let header: HeaderRecord | undefined;
      let ended = false;
      const counts = zeroCounts();
      let batch: { kind: Kind; rows: Insertable<DB[keyof DB]>[]; firstLine: number; lastLine: number } | undefined;

      const flush = async () => {
        if (batch === undefined || batch.rows.length === 0) return;
        const { kind, rows, firstLine, lastLine } = batch;
        batch = undefined;
        try {
          await trx.insertInto(TABLES[kind]).values(rows as never).execute();
        } catch (error) {
          throw new RestoreError(`lines ${firstLine}-${lastLine} (${kind} records) cannot be written: ${(error as Error).message}`);
        }
      };

      for await (const [text, line] of readLines(input, MAX_LINE_BYTES)) {
        if (options.onProgress && Date.now() - reported > 200) {
          reported = Date.now();
          options.onProgress(size === 0 ? 1 : Math.min(1, raw.bytesRead / size));
        }
        if (header === undefined) {
          header = parseHeader(text);
          const unknown = header.migrations.filter((name) => !(name in MIGRATIONS));
          if (unknown.length > 0) {
            throw new RestoreError(`the backup was made by a newer version of the service (its schema has ${unknown.join(', ')}); restore it with that version or a later one`);
          }
          continue;
        }
        if (text === '') continue;
        if (ended) throw new BackupFormatError(line, 'there is more after the end record');
        const record = parseRecord(text, line);
        if (record.type === 'end') {
          await flush();
          for (const kind of KINDS) {
            if (record.counts[kind] !== header.counts[kind] || counts[kind] !== header.counts[kind]) {
              throw new BackupFormatError(line, `the file holds ${counts[kind]} ${kind} records, but its header and end record say ${header.counts[kind]} and ${record.counts[kind]}`);
            }
          }
          ended = true;
          continue;
        }
        if (batch !== undefined && KINDS.indexOf(record.type) < KINDS.indexOf(batch.kind)) {
          throw new BackupFormatError(line, `a ${record.type} record after ${batch.kind} records: the records are out of order`);
        }
        if (batch !== undefined && (batch.kind !== record.type || batch.rows.length >= BATCH[batch.kind])) await flush();
        batch ??= { kind: record.type, rows: [], firstLine: line, lastLine: line };
        batch.rows.push(rowOf(record));
        batch.lastLine = line;
        counts[record.type]++;
      }
      if (header === undefined) throw new RestoreError(`${file} is empty`);
      if (!ended) throw new RestoreError(`${file} ends before its end record: it is incomplete (cut off while it was written or copied?)`);

      await database.quirks.continueIdsAfterMax(trx, ['entries', 'tokens', 'moderation_log']);
      // The revision never goes backwards: the backup's, or one past this database's own.
      const current = await trx.selectFrom('meta').select('value').where('key', '=', 'revision').executeTakeFirstOrThrow();
      const revision = Math.max(header.revision, Number(current.value) + 1);
      await trx.updateTable('meta').set({ value: revision }).where('key', '=', 'revision').execute();
      // The restored data is in no change log: a copy starts again from an export of it (docs/events.md).
      await trx.updateTable('meta').set({ value: revision }).where('key', '=', 'changes_floor').execute();
      return { header, counts, revision };
    });
    await database.quirks.refreshStatistics(database.db);
    options.onProgress?.(1);
    return result;
  } catch (error) {
    if (error instanceof BackupFormatError) throw new RestoreError(`${file} ${error.message}`);
    if (error instanceof LineTooLongError) {
      throw new RestoreError(`${file} line ${error.line}: the line is longer than ${MAX_LINE_BYTES.toLocaleString('en')} bytes; no line of a backup is (is this the right file?)`);
    }
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'Z_DATA_ERROR' || code === 'Z_BUF_ERROR') {
      throw new RestoreError(`${file}: the gzip data is damaged or cut off`);
    }
    throw error;
  } finally {
    input.destroy();
    raw.destroy();
  }
}
