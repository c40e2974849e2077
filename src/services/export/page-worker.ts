/**
 * The task an export worker runs: one page of an export, read from the embedded database through
 * the worker's own connection and written as a piece of the export file (formats/export.ts), as
 * UTF-8 bytes for the main thread to send as they are.
 */
import { Kysely } from 'kysely';
import { openSqlite, sqliteQuirks } from '../../db/dialects/sqlite.ts';
import type { DB } from '../../db/schema.ts';
import type { ExportFormat } from '../../domain/export-params.ts';
import type { EntryCursor, EntryFilter } from '../../domain/entry-selection.ts';
import type { ServerVariables } from '../../domain/variables.ts';
import { exportPage, pagePick } from '../../formats/export.ts';
import { EntryQuery } from '../../storage/entry-query.ts';

export interface PageTask {
  /** The SQLite file; one connection per worker, opened with the first task. */
  file: string;
  format: ExportFormat;
  filter: EntryFilter;
  /** The last entry of the previous page; absent for the first page. */
  after?: EntryCursor;
  pageSize: number;
  variables: ServerVariables;
  /** The export's seed (formats/export.ts exportSeed) and this page's number, 0 for the first. */
  seed: string;
  page: number;
}

/** A failure as it crosses the thread: an Error loses its `code` (SQLITE_BUSY: 503) on the way. */
export interface PageFailure {
  failed: { message: string; code?: string };
}

export interface PageResult {
  /** The page as a piece of the file (UTF-8); empty when the walk has ended. */
  bytes: Uint8Array;
  /** Where the next page starts, or null when this was the last. */
  next: EntryCursor | null;
}

const encoder = new TextEncoder();
let opened: { file: string; query: EntryQuery } | undefined;

/**
 * entryQuery is the worker's reader of `file`, opened with its first task. Straight through the
 * SQLite dialect, not db/database.ts, which would load the metrics registry and the migrations into
 * every worker thread for nothing (about 16 MiB).
 */
function entryQuery(file: string): EntryQuery {
  if (opened?.file !== file) opened = { file, query: new EntryQuery(new Kysely<DB>({ dialect: openSqlite(file).dialect }), sqliteQuirks) };
  return opened.query;
}

export default async function exportPageTask(task: PageTask): Promise<PageResult | PageFailure> {
  try {
    return await readPage(task);
  } catch (error) {
    const { message, code } = error as { message?: unknown; code?: unknown };
    return { failed: { message: String(message), ...(typeof code === 'string' ? { code } : {}) } };
  }
}

async function readPage(task: PageTask): Promise<PageResult> {
  const query = entryQuery(task.file);
  const rows = await query.page(task.filter, task.pageSize, task.after);
  const text = rows.length === 0 ? '' : exportPage(task.format, rows, task.variables, task.page === 0, pagePick(task.seed, task.page));
  const bytes = encoder.encode(text);
  const last = rows.at(-1);
  const next = rows.length < task.pageSize || last === undefined ? null : { timestamp: last.timestamp, uuid: last.uuid };
  // Copied to the main thread (its own buffer, exactly the page): a memcpy, microseconds for a page.
  return { bytes, next };
}
