/**
 * The tasks a read worker runs, each through the worker's own connection to the embedded database:
 * one page of an export, written as a piece of the export file (formats/export.ts) in UTF-8 bytes for
 * the main thread to send as they are (the default export); a page of the search page (searchTask);
 * a list of entries (listTask); a read of the OData interface (odataTask); random picks drawn
 * ahead of the requests, read and prepared as their JSON (drawTask).
 */
import type SQLite from 'better-sqlite3';
import { Kysely, sql } from 'kysely';
import { openSqlite, sqliteQuirks, sqliteReadNow } from '../../db/dialects/sqlite.ts';
import type { DB } from '../../db/schema.ts';
import type { ExportFormat } from '../../domain/export-params.ts';
import type { EntryCursor, EntryFilter } from '../../domain/entry-selection.ts';
import { isAscii } from '../../domain/text.ts';
import { mathRandomPick, type ServerVariables } from '../../domain/variables.ts';
import { entryJsonEncoder, entryJsonToWire, type EntryJsonWire } from '../../formats/entry.ts';
import { EntryReadsNow } from '../../storage/entries.ts';
import { resolveDraw, type Draw } from '../entries/draws.ts';
import { csvLines, exportPage, pagePick, storedLineCursor, type ExportRow, type StoredLine } from '../../formats/export.ts';
import { runODataRead, type ODataAnswer, type ODataRead } from '../../storage/odata-reads.ts';
import { EntryQuery, EXPORT_FEW_MATCHES, type ColumnOrderKey, type EntryListQuery, type ListedEntry, type SearchPage } from '../../storage/entry-query.ts';

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
  /** Where to write the page's bytes if they fit: a slot of the export's buffer shared with the event loop (PageSlots). */
  slot?: PageSlot;
}

/** A slot of a buffer shared between the event loop and the worker. */
export interface PageSlot {
  buffer: SharedArrayBuffer;
  offset: number;
  size: number;
}

/**
 * A failure as it crosses the thread: an Error loses its class and `code` (SQLITE_BUSY: 503) on the
 * way, so they travel as data (`name`, `code`, and a time limit's or an OData refusal's numbers).
 */
export interface PageFailure {
  failed: { message: string; name?: string; code?: string; limitMs?: number; status?: number };
  /** The database time the task took before it failed (an OData read's cost). */
  dbMs?: number;
}

export interface PageResult {
  /**
   * The page as a piece of the file (UTF-8), empty when the walk has ended: its bytes, or, when they
   * were written into the task's slot, how many there are.
   */
  bytes: Uint8Array | number;
  /** Where the next page starts, or null when this was the last. */
  next: EntryCursor | null;
}

const encoder = new TextEncoder();

/** How long a read waits for a lock (SQLite's own wait, on this thread). */
const BUSY_TIMEOUT_MS = 5000;

interface Reader {
  file: string;
  query: EntryQuery;
  raw: SQLite.Database;
  /** The point reads of random draws, made with the first draw task. */
  now?: EntryReadsNow;
  /**
   * The statements of export pages, by what shapes them: the filter, the page size, the format's
   * columns and whether a cursor is given.
   */
  pages: Map<string, PageStatement>;
}

/** An export page's statement, prepared once for all the pages of its export. */
interface PageStatement {
  /** In raw mode (rows as arrays) or, for one column, plucked. */
  statement: SQLite.Statement<unknown[], unknown>;
  /** Its parameters, a cursor's stand-ins (CURSOR) in their place. */
  parameters: readonly unknown[];
}

/**
 * Stand-ins for the values of a page's cursor in a statement compiled once: building and compiling
 * the query through Kysely for each page was a twentieth of the worker's time.
 */
const CURSOR = { timestamp: Symbol('cursor timestamp'), uuid: Symbol('cursor uuid') };

/** How many export page statements a worker keeps (one an export at a time, as a rule). */
const PAGE_STATEMENTS = 32;
let opened: Reader | undefined;

/**
 * reader is the worker's reader of `file`, opened with its first task. Straight through the SQLite
 * dialect, not db/database.ts, which would load the metrics registry and the migrations into every
 * worker thread for nothing (about 16 MiB).
 */
function reader(file: string): Reader {
  if (opened?.file !== file) {
    const { dialect, raw } = openSqlite(file);
    // A reader rarely meets a lock (WAL), and when it does it may wait here, off the event loop, as
    // long as the event loop's own path waits (openSqlite's default) instead of retrying in steps.
    raw.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    const db = new Kysely<DB>({ dialect });
    opened = { file, query: new EntryQuery(db, sqliteQuirks), raw, pages: new Map(), now: new EntryReadsNow(db, sqliteReadNow(raw)) };
  }
  return opened;
}

/**
 * readPageRows reads one page with the entry query's own statement (EntryQuery.select, the query
 * every list runs), executed on the connection: for CSV, one stored line a row (formats/export.ts
 * StoredLine), made by SQLite; for the other formats, rows as arrays of the columns a file needs, in
 * this order: uuid, text, created_at (the list's `state` would be one more string a row). Rows as
 * objects, built property by property by the driver, took a third of the export's time more.
 */
async function readPageRows<Row>({ query, raw, pages }: Reader, task: PageTask, csv: boolean): Promise<Row[]> {
  // A search term found in few entries is read through the index, one in many by testing rows in
  // order from the cursor, so that every page, the first too, stops early (EntryQuery.textPlan).
  const textMatch = await query.textPlan(task.filter, EXPORT_FEW_MATCHES);
  const key = JSON.stringify([task.filter, task.pageSize, csv, task.after !== undefined, textMatch]);
  let page = pages.get(key);
  if (page === undefined) {
    const after = task.after ? { after: CURSOR as unknown as EntryCursor } : {};
    const select = query.select({ filter: task.filter, limit: task.pageSize, ...after, ...(textMatch ? { textMatch } : {}) }).clearSelect();
    const compiled = (
      csv
        ? select.select(sql<StoredLine>`entries.uuid || ',' || entries.text || ',,' || entries.created_at || char(13, 10)`.as('line'))
        : select.select(['entries.uuid', 'entries.text', 'entries.created_at'])
    ).compile();
    const statement = raw.prepare<unknown[], unknown>(compiled.sql);
    if (csv) statement.pluck(true);
    else statement.raw(true);
    if (pages.size >= PAGE_STATEMENTS) pages.clear();
    page = { statement, parameters: compiled.parameters };
    pages.set(key, page);
  }
  const { after } = task;
  const parameters = after === undefined ? page.parameters : page.parameters.map((p) => (p === CURSOR.timestamp ? after.timestamp : p === CURSOR.uuid ? after.uuid : p));
  return page.statement.all(...parameters) as Row[];
}

/** A page of the search page, read in the worker (ReadWorkers.searchPage). */
export interface SearchTask {
  file: string;
  filter: EntryFilter;
  limit: number;
  position: { next?: EntryCursor; prev?: EntryCursor };
}

/** searchTask reads a page of the search page through the worker's own connection. */
export async function searchTask(task: SearchTask): Promise<SearchPage | PageFailure> {
  try {
    return await reader(task.file).query.searchPage(task.filter, task.limit, task.position);
  } catch (error) {
    return failure(error);
  }
}

/**
 * A list of entries read in the worker (ReadWorkers.list): a filter, an order of columns, a cursor
 * and a limit, which can cross the thread (an OData condition, a Kysely expression, cannot).
 */
export interface ListTask {
  file: string;
  query: Pick<EntryListQuery, 'filter' | 'after' | 'limit'> & { order?: readonly ColumnOrderKey[] };
}

/** listTask reads a list of entries through the worker's own connection. */
export async function listTask(task: ListTask): Promise<ListedEntry[] | PageFailure> {
  try {
    return await reader(task.file).query.list(task.query);
  } catch (error) {
    return failure(error);
  }
}

/** A read of the OData interface (ReadWorkers.odata): the read and the variable tokens its filter needs. */
export interface ODataTask {
  file: string;
  read: ODataRead;
  variableTokens: readonly string[];
}

/** odataTask runs an OData read through the worker's own connection, and says how long it took. */
export async function odataTask(task: ODataTask): Promise<{ answer: ODataAnswer<ODataRead>; dbMs: number } | PageFailure> {
  const started = performance.now();
  try {
    const answer = await runODataRead(reader(task.file).query, sqliteQuirks, task.variableTokens, task.read);
    return { answer, dbMs: performance.now() - started };
  } catch (error) {
    return { ...failure(error), dbMs: performance.now() - started };
  }
}

/** Random draws to resolve ahead of the requests (ReadWorkers.draws), and the server variables to prepare them with. */
export interface DrawTask {
  file: string;
  draws: readonly Draw[];
  variables: ServerVariables;
}

/** A drawn entry's prepared JSON and, when all ASCII, its length in bytes; null when its block held fewer than counted. */
export type DrawnEntry = { json: EntryJsonWire; asciiBytes: number | undefined } | null;

/** drawTask resolves random draws (services/entries/draws.ts) through the worker's own connection and prepares their JSON. */
export async function drawTask(task: DrawTask): Promise<DrawnEntry[] | PageFailure> {
  try {
    const reads = reader(task.file).now!;
    const encode = entryJsonEncoder(task.variables);
    const reading = { byId: (id: number) => reads.findById(id), nthInBlock: (block: number, n: number) => reads.nthInBlock(block, n) };
    return task.draws.map((draw) => {
      const stored = resolveDraw(draw, mathRandomPick, reading);
      if (stored === null || stored === undefined) return null;
      const json = encode(stored);
      return { json: entryJsonToWire(json), asciiBytes: typeof json === 'string' && isAscii(json) ? json.length : undefined };
    });
  } catch (error) {
    return failure(error);
  }
}

/** failure is an error as it can cross the thread. */
function failure(error: unknown): PageFailure {
  const { message, name, code, limitMs, status } = error as { message?: unknown; name?: unknown; code?: unknown; limitMs?: unknown; status?: unknown };
  return {
    failed: {
      message: String(message),
      ...(typeof name === 'string' ? { name } : {}),
      ...(typeof code === 'string' ? { code } : {}),
      ...(typeof limitMs === 'number' ? { limitMs } : {}),
      ...(typeof status === 'number' ? { status } : {}),
    },
  };
}

export default async function exportPageTask(task: PageTask): Promise<PageResult | PageFailure> {
  try {
    return await readPage(task);
  } catch (error) {
    return failure(error);
  }
}

async function readPage(task: PageTask): Promise<PageResult> {
  const read = reader(task.file);
  const first = task.page === 0;
  const pick = pagePick(task.seed, task.page);
  let text: string;
  let next: EntryCursor | null = null;
  if (task.format === 'csv') {
    const lines = await readPageRows<StoredLine>(read, task, true);
    text = lines.length === 0 ? '' : csvLines(lines, task.variables, first, pick);
    if (lines.length === task.pageSize) next = storedLineCursor(lines[lines.length - 1]!);
  } else {
    const rows = await readPageRows<ExportRow>(read, task, false);
    const entries = rows.map(([uuid, raw, timestamp]) => ({ uuid, text: raw, timestamp }));
    text = rows.length === 0 ? '' : exportPage(task.format, entries, task.variables, first, pick);
    const last = rows.at(-1);
    if (rows.length === task.pageSize && last !== undefined) next = { timestamp: last[2], uuid: last[0] };
  }
  if (task.slot !== undefined) {
    const { buffer, offset, size } = task.slot;
    const { read, written } = encoder.encodeInto(text, new Uint8Array(buffer, offset, size));
    if (read === text.length) return { bytes: written, next };
  }
  // Copied to the main thread (its own buffer, exactly the page): a memcpy, microseconds for a page.
  return { bytes: encoder.encode(text), next };
}
