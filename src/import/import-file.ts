/**
 * `nonsense import FILE`: reads this service's own CSV, JSON and TXT exports and adds their entries.
 * The file is streamed (memory does not grow with it) into one transaction: a bad row aborts the whole
 * import, reported with its line (CSV, TXT) or item number (JSON), and nothing is written. Entries whose
 * uuid or text already exists are skipped, so importing the same file twice changes nothing.
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
import readline from 'node:readline';
import { parse } from 'csv-parse';
import StreamArray from 'stream-json/streamers/StreamArray.js';
import { EXPORT_FORMATS, type ExportFormat } from '../domain/export-params.ts';
import { checkEntryText } from '../domain/text.ts';
import { parseUuid } from '../domain/uuid.ts';
import { isClientVariable, tokensOf } from '../domain/variables.ts';
import { restoreFormula } from '../formats/csv.ts';
import type { InsertResult, NewEntry } from '../storage/entries.ts';
import type { Storage } from '../storage/index.ts';

export class ImportError extends Error {
  constructor(
    readonly where: string,
    message: string,
  ) {
    super(`${where}: ${message}`);
    this.name = 'ImportError';
  }
}

export interface ImportOptions {
  format?: ExportFormat;
  /** Called now and then with the share of the file read, from 0 to 1. */
  onProgress?: (fraction: number) => void;
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
    if (!Number.isSafeInteger(value) || (value as number) < 0) {
      throw new ImportError(row.where, `"timestamp" must be a non-negative integer (Unix seconds): ${JSON.stringify(row.timestamp).slice(0, 40)}`);
    }
    timestamp = value as number;
  }
  return { uuid, text: text.text, timestamp };
}

async function* csvRows(stream: fs.ReadStream): AsyncGenerator<RawRow> {
  const parser = stream.pipe(parse({ columns: true, bom: true, info: true, skip_empty_lines: true }));
  try {
    for await (const { record, info } of parser as AsyncIterable<{ record: Record<string, string>; info: { lines: number } }>) {
      if (!('nonsense' in record)) throw new ImportError(`line ${info.lines}`, 'the CSV has no "nonsense" column');
      yield {
        where: `line ${info.lines}`,
        uuid: record.uuid,
        nonsense: restoreFormula(record.nonsense),
        original_nonsense: record.original_nonsense === undefined ? undefined : restoreFormula(record.original_nonsense),
        timestamp: record.timestamp,
      };
    }
  } catch (error) {
    if (error instanceof ImportError) throw error;
    const e = error as { lines?: number; message: string };
    throw new ImportError(`line ${e.lines ?? '?'}`, `not valid CSV: ${e.message}`);
  }
}

async function* jsonRows(stream: fs.ReadStream): AsyncGenerator<RawRow> {
  const items = stream.pipe(StreamArray.withParser());
  try {
    for await (const { key, value } of items as AsyncIterable<{ key: number; value: unknown }>) {
      const where = `item ${key + 1}`;
      if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new ImportError(where, 'each item must be an object');
      yield { where, ...(value as Record<string, unknown>) };
    }
  } catch (error) {
    if (error instanceof ImportError) throw error;
    throw new ImportError('the file', `not valid JSON (an array of entries is expected): ${(error as Error).message}`);
  }
}

async function* txtRows(stream: fs.ReadStream): AsyncGenerator<RawRow> {
  let line = 0;
  for await (const text of readline.createInterface({ input: stream, crlfDelay: Infinity })) {
    line++;
    if (text.trim() === '') continue;
    yield { where: `line ${line}`, nonsense: text };
  }
}

const READERS: Record<ExportFormat, (stream: fs.ReadStream) => AsyncGenerator<RawRow>> = { csv: csvRows, json: jsonRows, txt: txtRows };

/** importFile imports one file; see the module comment. */
export async function importFile(storage: Storage, file: string, options: ImportOptions = {}): Promise<ImportResult> {
  const defined = await storage.variables.values();
  const { stream, size } = openFile(file);
  let format: ExportFormat;
  try {
    format = fileFormatOf(file, options.format);
  } catch (error) {
    stream.destroy();
    throw error;
  }
  const now = options.now ?? Math.floor(Date.now() / 1000);
  let reported = 0;
  const undefinedUses = new Map<string, number>();
  async function* entries(): AsyncGenerator<NewEntry> {
    for await (const row of READERS[format](stream)) {
      if (options.onProgress && Date.now() - reported > 200) {
        reported = Date.now();
        options.onProgress(size === 0 ? 1 : stream.bytesRead / size);
      }
      const entry = toEntry(row, now);
      for (const token of tokensOf(entry.text)) {
        if (defined.has(token) || isClientVariable(token)) continue;
        const count = undefinedUses.get(token);
        if (count !== undefined || undefinedUses.size < MAX_UNDEFINED_TRACKED) undefinedUses.set(token, (count ?? 0) + 1);
      }
      yield entry;
    }
  }
  try {
    const result = await storage.entries.insertEntries(entries());
    const undefinedVariables = [...undefinedUses]
      .map(([name, count]) => ({ name, entries: count }))
      .sort((a, b) => b.entries - a.entries || (a.name < b.name ? -1 : 1));
    return { ...result, undefinedVariables };
  } finally {
    stream.destroy();
  }
}
