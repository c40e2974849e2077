/**
 * The tasks a read worker runs, each through the worker's own connection to the embedded database:
 * one page of an export, written as a piece of the export file (formats/export.ts) in UTF-8 bytes for
 * the main thread to send as they are (the default export); a page of the search page (searchTask);
 * a list of entries (listTask); a read of the OData interface (odataTask); random picks drawn
 * ahead of the requests, read and prepared as their JSON (drawTask); the pages a write is about to
 * touch, read so that the write finds them in memory (warmTask).
 */
import type SQLite from 'better-sqlite3';
import { Kysely, sql } from 'kysely';
import { openSqlite, sqliteQuirks, sqliteReadNow } from '../../db/dialects/sqlite.ts';
import type { DB } from '../../db/schema.ts';
import type { ExportFormat } from '../../domain/export-params.ts';
import type { EntryCursor, EntryFilter } from '../../domain/entry-selection.ts';
import { mathRandomPick, type ServerVariables } from '../../domain/variables.ts';
import { asciiBytesOf, entryJsonEncoder, entryJsonToWire, type EntryJsonWire } from '../../formats/entry.ts';
import { COUNT_BLOCK, EntryReadsNow } from '../../storage/entries.ts';
import { idsToTry, resolveDraw, type Draw } from '../entries/draws.ts';
import { csvLines, exportPage, pagePick, storedLineCursor, type ExportRow, type StoredLine } from '../../formats/export.ts';
import { runODataRead, type ODataAnswer, type ODataRead } from '../../storage/odata-reads.ts';
import { EntryQuery, SCAN_STEPS, scansInPages, type ColumnOrderKey, type EntryListQuery, type ListedEntry, type SearchPage } from '../../storage/entry-query.ts';

export interface PageTask {
  /** The SQLite file; one connection per worker, opened with the first task. */
  file: string;
  format: ExportFormat;
  filter: EntryFilter;
  /** Where the previous page ended; absent for the first page. */
  after?: EntryCursor;
  /** The entries this page holds at most (formats/export.ts exportPageSize). */
  pageSize: number;
  variables: ServerVariables;
  /**
   * The export's seed (formats/export.ts exportSeed) and this page's number among the pages that hold
   * entries: 0 when none came before it, so that it starts the file. A page that tests rows in order
   * may come back empty (EntryQuery.listPage); the walk on the event loop numbers only the others.
   */
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
  /** The reads of warmTask, prepared with the first. */
  warm?: WarmStatements;
  /**
   * The statements of export pages, by what shapes them: the filter, the format's columns, whether a
   * cursor and an end (EntryQuery.scanBound) are given, and how the term is matched; and the
   * statements of the ends.
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
 * Stand-ins for the values of a page's cursor, its end and its size in a statement compiled once:
 * building and compiling the query through Kysely for each page was a twentieth of the worker's time.
 */
const CURSOR = { timestamp: Symbol('cursor timestamp'), uuid: Symbol('cursor uuid') };
const UNTIL = { timestamp: Symbol('end timestamp'), uuid: Symbol('end uuid') };
const LIMIT = Symbol('page size');

/**
 * How many export page statements a worker keeps (one an export at a time, as a rule): an export
 * tested in order has a dozen, its pages' and its steps' ends (EntryQuery.listPage).
 */
const PAGE_STATEMENTS = 64;
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
 * prepared is the statement `key` of the reader, compiled from `build` (which writes the stand-ins
 * CURSOR, UNTIL and LIMIT where a page's values go) and prepared on its first use.
 */
function prepared({ raw, pages }: Reader, key: string, build: () => { sql: string; parameters: readonly unknown[] }, mode: 'pluck' | 'raw'): PageStatement {
  let page = pages.get(key);
  if (page === undefined) {
    const compiled = build();
    const statement = raw.prepare<unknown[], unknown>(compiled.sql);
    if (mode === 'pluck') statement.pluck(true);
    else statement.raw(true);
    if (pages.size >= PAGE_STATEMENTS) pages.clear();
    page = { statement, parameters: compiled.parameters };
    pages.set(key, page);
  }
  return page;
}

/** runPrepared runs a prepared statement with a page's values in place of the stand-ins. */
function runPrepared<Row>({ statement, parameters }: PageStatement, limit: number, after?: EntryCursor, until?: EntryCursor): Row[] {
  const values = parameters.map((p) => {
    if (p === LIMIT) return limit;
    if (p === CURSOR.timestamp) return after!.timestamp;
    if (p === CURSOR.uuid) return after!.uuid;
    if (p === UNTIL.timestamp) return until!.timestamp;
    if (p === UNTIL.uuid) return until!.uuid;
    return p;
  });
  return statement.all(...values) as Row[];
}

/**
 * readPageRows reads one page with the entry query's own statement (EntryQuery.select, the query
 * every list runs), executed on the connection: for CSV, one stored line a row (formats/export.ts
 * StoredLine), made by SQLite; for the other formats, rows as arrays of the columns a file needs, in
 * this order: uuid, text, created_at (the list's `state` would be one more string a row). Rows as
 * objects, built property by property by the driver, took a third of the export's time more. `until`
 * is where a page that tests rows in order stopped testing them (EntryQuery.listPage), when it did.
 */
async function readPageRows<Row>(reader: Reader, task: PageTask, csv: boolean): Promise<{ rows: Row[]; until?: EntryCursor }> {
  const { query } = reader;
  // A search term found in few entries is read through the index, one in many by testing rows in
  // order from the cursor, a bounded number of them, so that every page, the first too, stops early
  // (EntryQuery.textPlan, as for the search page).
  const textMatch = await query.textPlan(task.filter);
  const planned: EntryListQuery = { filter: task.filter, ...(textMatch ? { textMatch } : {}) };
  const rows: Row[] = [];
  let from = task.after;
  let until: EntryCursor | undefined;
  // As EntryQuery.listPage: a page tested in order takes its rows in steps, each up to its end.
  for (const step of scansInPages(planned) ? SCAN_STEPS : [undefined]) {
    const shape = [task.filter, from !== undefined, textMatch];
    const walked = { ...planned, ...(from ? { after: CURSOR as unknown as EntryCursor } : {}) };
    if (step !== undefined) {
      const bound = prepared(reader, JSON.stringify(['until', ...shape, step]), () => query.scanBound(walked, step).compile(), 'raw');
      const row = runPrepared<[number, string]>(bound, 0, from)[0];
      until = row === undefined ? undefined : { timestamp: Number(row[0]), uuid: row[1] };
    }
    const page = prepared(
      reader,
      JSON.stringify(['page', ...shape, csv, until !== undefined]),
      () => {
        const ended = until ? { until: UNTIL as unknown as EntryCursor } : {};
        const select = query.select({ ...walked, ...ended, limit: LIMIT as unknown as number }).clearSelect();
        return (
          csv
            ? select.select(sql<StoredLine>`entries.uuid || ',' || entries.text || ',,' || entries.created_at || char(13, 10)`.as('line'))
            : select.select(['entries.uuid', 'entries.text', 'entries.created_at'])
        ).compile();
      },
      csv ? 'pluck' : 'raw',
    );
    rows.push(...runPrepared<Row>(page, task.pageSize - rows.length, from, until));
    if (rows.length === task.pageSize || until === undefined) break;
    from = until;
  }
  return { rows, ...(until ? { until } : {}) };
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

/** listTask reads a search's list of entries (EntryQuery.find) through the worker's own connection. */
export async function listTask(task: ListTask): Promise<ListedEntry[] | PageFailure> {
  try {
    return await reader(task.file).query.find(task.query);
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
    // The drawn ids first, all in one read: most are visible, and each found is its draw's entry.
    const first = reads.findByIds(task.draws.filter((draw) => idsToTry(draw) > 0).map((draw) => draw.id));
    return task.draws.map((draw) => {
      const tried = first !== undefined && idsToTry(draw) > 0;
      const stored = (tried ? first.get(draw.id) : undefined) ?? resolveDraw(draw, mathRandomPick, reads, tried ? 1 : 0);
      if (stored === null || stored === undefined) return null;
      const json = encode(stored);
      return { json: entryJsonToWire(json), asciiBytes: asciiBytesOf(json) };
    });
  } catch (error) {
    return failure(error);
  }
}

/** The rows a write is about to touch (storage/page-warming.ts WriteKeys). */
export interface WarmTask {
  file: string;
  uuid?: string;
  textKey?: string;
}

interface WarmStatements {
  byUuid: SQLite.Statement<[string], { id: number; created_at: number }>;
  /** Both places of the entry in the state index: where it is, and where a hide or a show puts it. */
  stateIndex: SQLite.Statement<[number, string], unknown>;
  block: SQLite.Statement<[number], unknown>;
  byTextKey: SQLite.Statement<[string], unknown>;
}

/**
 * warmTask reads the pages a write is about to touch (its entry's row by uuid, the entry's
 * places in the state index, its block's count, the text key's place in its index) and says how many
 * rows it found; what it reads is thrown away, as the kernel's page cache keeps the pages for the write.
 */
export function warmTask(task: WarmTask): number | PageFailure {
  try {
    const read = reader(task.file);
    const raw = read.raw;
    const statements = (read.warm ??= {
      byUuid: raw.prepare('select id, created_at from entries where uuid = ?'),
      stateIndex: raw.prepare("select 1 from entries indexed by entries_state_created where state in ('visible', 'hidden') and created_at = ? and uuid = ?"),
      block: raw.prepare(`select visible from entry_counts where block = ?`),
      byTextKey: raw.prepare('select 1 from entries where text_key = ?'),
    });
    let found = 0;
    if (task.uuid !== undefined) {
      const row = statements.byUuid.get(task.uuid);
      if (row !== undefined) {
        found += 1 + statements.stateIndex.all(row.created_at, task.uuid).length;
        found += statements.block.all(Math.floor(row.id / COUNT_BLOCK)).length;
      }
    }
    if (task.textKey !== undefined) found += statements.byTextKey.all(task.textKey).length;
    return found;
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
    const { rows: lines, until } = await readPageRows<StoredLine>(read, task, true);
    text = lines.length === 0 ? '' : csvLines(lines, task.variables, first, pick);
    if (lines.length === task.pageSize) next = storedLineCursor(lines[lines.length - 1]!);
    else if (until) next = until;
  } else {
    const { rows, until } = await readPageRows<ExportRow>(read, task, false);
    const entries = rows.map(([uuid, raw, timestamp]) => ({ uuid, text: raw, timestamp }));
    text = rows.length === 0 ? '' : exportPage(task.format, entries, task.variables, first, pick);
    const last = rows.at(-1);
    if (rows.length === task.pageSize && last !== undefined) next = { timestamp: last[2], uuid: last[0] };
    else if (until) next = until;
  }
  if (task.slot !== undefined) {
    const { buffer, offset, size } = task.slot;
    const { read, written } = encoder.encodeInto(text, new Uint8Array(buffer, offset, size));
    if (read === text.length) return { bytes: written, next };
  }
  // Copied to the main thread (its own buffer, exactly the page): a memcpy, microseconds for a page.
  return { bytes: encoder.encode(text), next };
}
