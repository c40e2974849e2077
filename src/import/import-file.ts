/**
 * `nonsense import FILE`: reads this service's own CSV, JSON and TXT exports and adds their entries.
 * The file is read twice, streamed both times (memory does not grow with it): first every row is
 * checked and nothing is written, so a bad row is reported with the file and its line (CSV, TXT) or
 * item number (JSON) and nothing is imported; then the entries are written in transactions of
 * IMPORT_BATCH entries, so that the write lock's hold and the engine's journal stay bounded however
 * large the file. An import cut short while writing (a full
 * disk, a killed process) keeps the batches it committed and says so (ImportInterruptedError); since
 * entries whose uuid or text already exists are skipped, running the same command again adds the
 * rest, and importing the same file twice changes nothing. Every row is held to the rules of the
 * admin API (domain/text.ts, the timestamp's range); a row, item or line longer than MAX_RECORD_BYTES
 * is refused before it is read whole. Afterwards the query planner's statistics are refreshed.
 *
 * What each format can restore: CSV and JSON carry the raw text (`original_nonsense` when the text has
 * a variable), the uuid and the timestamp, so they restore visible entries exactly. TXT carries only the
 * delivered text of single-line entries: no uuid, no timestamp (the import time is used), and server
 * variables already replaced by one random value each. Variables, emojis, hidden entries, reports,
 * tokens and the moderation log are in no export; `nonsense backup` / `restore` carry those.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pipeline, Transform } from 'node:stream';
import { parse, type CsvError } from 'csv-parse';
import Parser from 'stream-json/Parser.js';
import StreamArray from 'stream-json/streamers/StreamArray.js';
import { EXPORT_FORMATS, type ExportFormat } from '../domain/export-params.ts';
import { checkEntryText } from '../domain/text.ts';
import { parseUuid } from '../domain/uuid.ts';
import { isClientVariable, tokensOf, type ServerVariables } from '../domain/variables.ts';
import { restoreFormula } from '../formats/csv.ts';
import { MAX_TIMESTAMP } from '../schemas/api.ts';
import type { BulkWrites } from '../db/database.ts';
import type { InsertResult, NewEntry } from '../storage/entries.ts';
import type { Storage } from '../storage/index.ts';
import { LineTooLongError, readLines } from './lines.ts';

/** ImportError: the file cannot be imported; `where` names the file and the line or item ("data.csv line 7"). */
export class ImportError extends Error {
  constructor(
    readonly where: string,
    message: string,
  ) {
    super(`${where}: ${message}`);
    this.name = 'ImportError';
  }
}

/**
 * The longest row (CSV), item (JSON) or line (TXT) an import reads: 1 MiB. An entry of an export is
 * at most a few times 2,000 characters with its quoting, so anything longer is no export row, and
 * refusing it there keeps a file of one endless line from being read into memory whole.
 */
export const MAX_RECORD_BYTES = 1024 * 1024;

/**
 * ImportInterruptedError: writing stopped part of the way (the file itself was checked whole before).
 * `added` entries were committed, up to `through` (the file and its last line or item written); the
 * same command adds the rest, skipping what is already there.
 */
export class ImportInterruptedError extends Error {
  constructor(
    readonly file: string,
    readonly added: number,
    readonly skipped: number,
    readonly through: string | undefined,
    cause: unknown,
  ) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(
      `${file}: the import stopped while writing (${reason}); ` +
        (added + skipped === 0
          ? 'nothing was imported'
          : `${added} entries were added and ${skipped} skipped (already present), through ${through}`) +
        '. Run the same command again to import the rest: entries already present are skipped.',
      { cause },
    );
    this.name = 'ImportInterruptedError';
  }
}

/**
 * Entries written per transaction. Each batch holds the write lock for a fraction of a second, so a
 * running service's own writes wait that long at most, and SQLite's WAL is copied into the database
 * file while the next batch is written (db/dialects/sqlite-bulk.ts) instead of growing to the size of
 * the import.
 */
export const IMPORT_BATCH = 2000;

/**
 * The SQLite page cache of the import's connection while it writes (db/dialects/sqlite-bulk.ts): room
 * for every page a batch changes in a database of any size, so that none is written or read twice.
 */
export const IMPORT_CACHE_BYTES = 64 * 1024 * 1024;

/** The two readings of a file: checking every row, then writing. */
export type ImportPhase = 'checking' | 'writing';

export interface ImportOptions {
  format?: ExportFormat;
  /** The database connection's page cache while the import writes (SQLite), in bytes; IMPORT_CACHE_BYTES by default. */
  cacheBytes?: number;
  /** Called now and then with the phase and the share of the file it has read, from 0 to 1. */
  onProgress?: (fraction: number, phase: ImportPhase) => void;
  /** Timestamp for rows that have none (TXT files); defaults to now. */
  now?: number;
}

/** What an import did, and the variable tokens its texts use that the database does not define. */
export interface ImportResult extends InsertResult {
  /**
   * Tokens such as `$ANIMAL$` used by the imported texts but defined neither in the database nor as a
   * client-side variable, with how many texts use each, most used first. Such texts are delivered
   * with the token as it is written.
   */
  undefinedVariables: { name: string; entries: number }[];
}

/** At most this many distinct undefined tokens are counted (a hostile file could hold millions). */
const MAX_UNDEFINED_TRACKED = 1000;

/** openFile opens the file to import, turning "missing", "a folder" and "not allowed" into one clear line. */
function openFile(file: string): { stream: fs.ReadStream; size: number } {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason =
      code === 'ENOENT' ? 'there is no such file'
      : code === 'EACCES' || code === 'EPERM' ? 'this user may not read it (permission denied)'
      : code === 'EISDIR' ? 'it is a folder, not a file'
      : `it cannot be read (${(error as Error).message})`;
    throw new ImportError(file, reason);
  }
  const stat = fs.fstatSync(fd);
  if (!stat.isFile()) {
    fs.closeSync(fd);
    throw new ImportError(file, stat.isDirectory() ? 'it is a folder, not a file' : 'it is not a regular file');
  }
  return { stream: fs.createReadStream(file, { fd }), size: stat.size };
}

/** fileFormatOf picks the format from `--format` or the file's extension. */
export function fileFormatOf(file: string, format?: string): ExportFormat {
  const chosen = (format ?? path.extname(file).slice(1)).toLowerCase();
  if (!(EXPORT_FORMATS as readonly string[]).includes(chosen)) {
    throw new ImportError(file, `cannot tell the format; name the file .csv, .json or .txt, or pass --format csv|json|txt`);
  }
  return chosen as ExportFormat;
}

/** A row as found in a file, before validation. */
interface RawRow {
  where: string;
  uuid?: unknown;
  nonsense?: unknown;
  original_nonsense?: unknown;
  timestamp?: unknown;
}

function toEntry(row: RawRow, now: number): NewEntry {
  const present = (v: unknown) => v !== undefined && v !== null && v !== '';
  let uuid: string = randomUUID();
  if (present(row.uuid)) {
    const parsed = typeof row.uuid === 'string' ? parseUuid(row.uuid) : null;
    if (parsed === null) throw new ImportError(row.where, `"uuid" is not a UUID: ${JSON.stringify(row.uuid).slice(0, 60)}`);
    uuid = parsed;
  }
  const raw = present(row.original_nonsense) ? row.original_nonsense : row.nonsense;
  if (typeof raw !== 'string') throw new ImportError(row.where, 'the entry has no text ("nonsense" is missing or not a string)');
  const text = checkEntryText(raw);
  if (!text.ok) throw new ImportError(row.where, text.reason);
  let timestamp = now;
  if (present(row.timestamp)) {
    const value = typeof row.timestamp === 'string' && /^\d{1,15}$/.test(row.timestamp) ? Number(row.timestamp) : row.timestamp;
    // The admin API's range (TimestampInput): what one endpoint refuses, the import does not write.
    if (!Number.isSafeInteger(value) || (value as number) < 0 || (value as number) > MAX_TIMESTAMP) {
      throw new ImportError(row.where, `"timestamp" must be a non-negative integer (Unix seconds) of at most 15 digits: ${JSON.stringify(row.timestamp).slice(0, 40)}`);
    }
    timestamp = value as number;
  }
  return { uuid, text: text.text, timestamp };
}

async function* csvRows(stream: fs.ReadStream, file: string): AsyncGenerator<RawRow> {
  const parser: ReturnType<typeof parse> = parse({
    // The header is checked as soon as it is read, so a missing column is reported on its own line.
    columns: (header: string[]) => {
      if (!header.includes('nonsense')) {
        throw new ImportError(`${file} line ${parser.info.lines}`, `the CSV has no "nonsense" column (the header names ${header.map((h) => JSON.stringify(h.slice(0, 40))).join(', ').slice(0, 200)})`);
      }
      return header;
    },
    bom: true,
    info: true,
    skip_empty_lines: true,
    max_record_size: MAX_RECORD_BYTES,
  });
  const rows = stream.pipe(parser);
  try {
    for await (const { record, info } of rows as AsyncIterable<{ record: Record<string, string>; info: { lines: number } }>) {
      yield {
        where: `${file} line ${info.lines}`,
        uuid: record.uuid,
        nonsense: record.nonsense === undefined ? undefined : restoreFormula(record.nonsense),
        original_nonsense: record.original_nonsense === undefined ? undefined : restoreFormula(record.original_nonsense),
        timestamp: record.timestamp,
      };
    }
  } catch (error) {
    if (error instanceof ImportError) throw error;
    const e = error as CsvError & { lines?: number };
    const where = `${file} line ${e.lines ?? parser.info.lines}`;
    if (e.code === 'CSV_MAX_RECORD_SIZE') throw new ImportError(where, `the row is longer than ${MAX_RECORD_BYTES.toLocaleString('en')} bytes; no row of an export is (is this the right file?)`);
    throw new ImportError(where, `not valid CSV: ${e.message}`);
  }
}

interface JsonToken {
  name: string;
  value?: unknown;
}

/**
 * jsonItemLimit passes the parser's tokens on, counting the size of the current item of the top-level
 * array (the characters of its strings, keys and numbers, and one for every other token), and fails
 * with the item's number once it passes MAX_RECORD_BYTES, before the item is assembled in memory.
 */
function jsonItemLimit(file: string): Transform {
  let depth = 0;
  let size = 0;
  let item = 1;
  return new Transform({
    objectMode: true,
    transform(token: JsonToken, _encoding, done) {
      if (token.name === 'startObject' || token.name === 'startArray') depth++;
      else if (token.name === 'endObject' || token.name === 'endArray') depth--;
      size += token.name === 'stringChunk' || token.name === 'numberChunk' ? (token.value as string).length : 1;
      if (size > MAX_RECORD_BYTES) {
        done(new ImportError(`${file} item ${item}`, `the item is longer than ${MAX_RECORD_BYTES.toLocaleString('en')} characters; no item of an export is (is this the right file?)`));
        return;
      }
      // An item of the top-level array ends where the depth comes back to 1: after its closing bracket,
      // or with its value when it is a plain value (packed values come after their chunks).
      const ended = depth === 1 && ['endObject', 'endArray', 'stringValue', 'numberValue', 'nullValue', 'trueValue', 'falseValue'].includes(token.name);
      if (ended) {
        item++;
        size = 0;
      }
      done(null, token);
    },
  });
}

async function* jsonRows(stream: fs.ReadStream, file: string): AsyncGenerator<RawRow> {
  const items = StreamArray.make();
  // Errors of any stage end the whole chain, and reach the loop below through `items`.
  pipeline(stream, new Parser(), jsonItemLimit(file), items, () => {});
  let read = 0;
  try {
    for await (const { key, value } of items as AsyncIterable<{ key: number; value: unknown }>) {
      read = key + 1;
      const where = `${file} item ${key + 1}`;
      if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new ImportError(where, 'each item must be an object');
      yield { where, ...(value as Record<string, unknown>) };
    }
  } catch (error) {
    if (error instanceof ImportError) throw error;
    throw new ImportError(file, `not valid JSON${read > 0 ? ` after item ${read}` : ''} (an array of entries is expected): ${(error as Error).message}`);
  }
}

async function* txtRows(stream: fs.ReadStream, file: string): AsyncGenerator<RawRow> {
  // A lone "\r" ends a line too, as in the text editors that write one.
  let extra = 0;
  try {
    for await (const [text, number] of readLines(stream, MAX_RECORD_BYTES)) {
      const pieces = text.split('\r');
      for (const [index, piece] of pieces.entries()) {
        if (piece.trim() === '') continue;
        yield { where: `${file} line ${number + extra + index}`, nonsense: piece };
      }
      extra += pieces.length - 1;
    }
  } catch (error) {
    if (error instanceof LineTooLongError) {
      throw new ImportError(`${file} line ${error.line + extra}`, `the line is longer than ${MAX_RECORD_BYTES.toLocaleString('en')} bytes; no line of an export is (is this the right file?)`);
    }
    throw error;
  }
}

const READERS: Record<ExportFormat, (stream: fs.ReadStream, file: string) => AsyncGenerator<RawRow>> = { csv: csvRows, json: jsonRows, txt: txtRows };

/** A checked entry and where in the file it was. */
interface ReadEntry {
  entry: NewEntry;
  where: string;
}

/** readEntries reads the file once, checking each row (ImportError for the first bad one). */
async function* readEntries(file: string, format: ExportFormat, now: number, onProgress?: (fraction: number) => void): AsyncGenerator<ReadEntry> {
  const { stream, size } = openFile(file);
  let reported = 0;
  try {
    for await (const row of READERS[format](stream, file)) {
      if (onProgress && Date.now() - reported > 200) {
        reported = Date.now();
        onProgress(size === 0 ? 1 : stream.bytesRead / size);
      }
      yield { entry: toEntry(row, now), where: row.where };
    }
  } finally {
    stream.destroy();
  }
}

/** importFile imports one file; see the module comment. */
export async function importFile(storage: Storage, file: string, options: ImportOptions = {}): Promise<ImportResult> {
  const defined = await storage.variables.values();
  // Opened first, so that a missing file is reported as such whatever its name.
  openFile(file).stream.destroy();
  const format = fileFormatOf(file, options.format);
  const now = options.now ?? Math.floor(Date.now() / 1000);
  const progress = (phase: ImportPhase) => (options.onProgress ? (fraction: number) => options.onProgress!(fraction, phase) : undefined);
  // Set up first, so that SQLite's checkpoint thread starts while the file is checked.
  const bulk = await storage.database.startBulkWrites({ cacheBytes: options.cacheBytes ?? IMPORT_CACHE_BYTES });
  try {
    return await checkAndWrite(storage, file, format, now, defined, bulk, progress);
  } finally {
    await bulk.end();
  }
}

/** checkAndWrite reads the file twice, as the module comment says. */
async function checkAndWrite(
  storage: Storage,
  file: string,
  format: ExportFormat,
  now: number,
  defined: ServerVariables,
  bulk: BulkWrites,
  progress: (phase: ImportPhase) => ((fraction: number) => void) | undefined,
): Promise<ImportResult> {
  // First reading: every row checked, nothing written.
  const undefinedUses = new Map<string, number>();
  for await (const { entry } of readEntries(file, format, now, progress('checking'))) {
    for (const token of tokensOf(entry.text)) {
      if (defined.has(token) || isClientVariable(token)) continue;
      const count = undefinedUses.get(token);
      if (count !== undefined || undefinedUses.size < MAX_UNDEFINED_TRACKED) undefinedUses.set(token, (count ?? 0) + 1);
    }
  }

  // Second reading: written a batch at a time.
  let added = 0;
  let skipped = 0;
  let through: string | undefined;
  let batch: NewEntry[] = [];
  let last: string | undefined;
  const write = async () => {
    await bulk.beforeBatch();
    const result = await storage.entries.insertEntries(batch);
    bulk.afterBatch();
    added += result.added;
    skipped += result.skipped;
    through = last;
    batch = [];
  };
  try {
    for await (const { entry, where } of readEntries(file, format, now, progress('writing'))) {
      batch.push(entry);
      last = where;
      if (batch.length >= IMPORT_BATCH) await write();
    }
    if (batch.length > 0) await write();
  } catch (error) {
    throw new ImportInterruptedError(file, added, skipped, through, error);
  }
  // Without fresh statistics PostgreSQL plans the first reads of a large import as for the empty table.
  if (added > 0) await storage.database.quirks.refreshStatistics(storage.database.db);
  const undefinedVariables = [...undefinedUses]
    .map(([name, count]) => ({ name, entries: count }))
    .sort((a, b) => b.entries - a.entries || (a.name < b.name ? -1 : 1));
  return { added, skipped, undefinedVariables };
}
