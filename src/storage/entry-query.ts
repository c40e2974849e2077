/**
 * The one query for lists of entries: which entries (a filter, plus an OData condition), in which
 * order, after which cursor, how many. The HTTP export, `nonsense export`, the OData feed, the site's
 * search and the admin search all read through `select`, so a filter and a page position mean the
 * same everywhere. Visible entries only, unless a filter asks for other states (the admin search).
 */
import { setImmediate as giveWay } from 'node:timers/promises';
import { sql, type Expression, type Kysely, type SqlBool } from 'kysely';
import type { EngineQuirks } from '../db/dialects/quirks.ts';
import type { DB, EntryState } from '../db/schema.ts';
import type { EntryCursor, EntryFilter } from '../domain/entry-selection.ts';
import { searchKey } from '../domain/search-text.ts';
import type { EntryRecord } from '../domain/records.ts';

export type { EntryCursor, EntryFilter } from '../domain/entry-selection.ts';
export { TimeLimitError } from '../db/time-limit.ts';

/** An entry of a list: the stored record and its state. */
/** A page of the search page: its entries, how many match in all, and the first one's position among them. */
export interface SearchPage {
  found: ListedEntry[];
  total: number;
  rank: number;
}

export interface ListedEntry extends EntryRecord {
  state: EntryState;
}

const toListed = (row: { uuid: string; text: string; created_at: number; state: EntryState }): ListedEntry => ({
  uuid: row.uuid,
  text: row.text,
  timestamp: Number(row.created_at),
  state: row.state,
});

/** How many rows one page of a streamed walk reads; the connection is free between pages. */
export const STREAM_PAGE_SIZE = 500;

/**
 * One key of an order. Keys on the immutable columns `created_at` and `uuid` can be resumed from an
 * `EntryCursor` (keyset paging); an expression key (OData `$orderby`) cannot.
 */
/** An order key on a column: plain data, which can cross to a worker thread. */
export type ColumnOrderKey = { column: 'created_at' | 'uuid'; direction: 'asc' | 'desc' };

export type EntryOrderKey =
  | ColumnOrderKey
  /** An expression that is never null, or is preceded by a key putting its nulls apart (null first or last). */
  | { expression: Expression<unknown>; direction: 'asc' | 'desc' };

/** The export order: oldest first, then by uuid. */
export const OLDEST_FIRST: readonly ColumnOrderKey[] = [
  { column: 'created_at', direction: 'asc' },
  { column: 'uuid', direction: 'asc' },
];

/** The admin search's order, and the site's search paging backwards. */
export const NEWEST_FIRST: readonly ColumnOrderKey[] = [
  { column: 'created_at', direction: 'desc' },
  { column: 'uuid', direction: 'desc' },
];

/** A list: a filter and a condition, an order, a resume position, offset and limit. */
export interface EntryListQuery {
  filter?: EntryFilter;
  /** A further condition on `entries` (the OData `$filter`). */
  where?: Expression<SqlBool>;
  /** The order; default OLDEST_FIRST. `uuid` ascending always ends it, so the order is total. */
  order?: readonly EntryOrderKey[];
  /** Only entries with `from` ≤ timestamp ≤ `to`, beside the filter's own (OData's timestamp comparisons). */
  range?: TimestampRange;
  /** Resume after the entry at this position in `order`; needs a keyset order (see isKeysetOrder). */
  after?: EntryCursor;
  offset?: number;
  limit?: number;
  /** Each statement of the query may run this long; past it, it fails with TimeLimitError (db/time-limit.ts). */
  timeLimitMs?: number;
  /**
   * Match `filter.q` by testing the rows visited, not through the search index (quirks'
   * containsText); in listPages, on the pages after the first only.
   */
  scanText?: boolean;
}

/** Inclusive bounds on the timestamp (Unix seconds); either may be absent. */
export interface TimestampRange {
  from?: number;
  to?: number;
}

/** isKeysetOrder tells whether an order can be resumed from an `EntryCursor` (timestamp, uuid): it has column keys only. */
export function isKeysetOrder(order: readonly EntryOrderKey[] | undefined): boolean {
  return (order ?? OLDEST_FIRST).every((key) => 'column' in key);
}

/**
 * walksByIndex tells whether each page of a walk of `query` is one seek of an index and a read of the
 * page: a keyset order, no offset, no condition beyond the filter's states, and a timestamp range only
 * when the order starts with the timestamp (else the range is tested on each row the order visits).
 */
export function walksByIndex(query: EntryListQuery): boolean {
  const ranged = query.range !== undefined || query.filter?.after !== undefined || query.filter?.before !== undefined;
  const plain = query.where === undefined && !query.offset && !query.filter?.q && !query.filter?.singleLine;
  return plain && isKeysetOrder(query.order) && (!ranged || startsWithTimestamp(query.order ?? OLDEST_FIRST));
}

/**
 * totalOrder appends `uuid` ascending unless uuid already orders, and drops repeated columns
 * (`$orderby=timestamp,created` names one column twice), so that every order is strict and total.
 */
function totalOrder(order: readonly EntryOrderKey[] | undefined): EntryOrderKey[] {
  const keys: EntryOrderKey[] = [];
  const seen = new Set<string>();
  for (const key of order ?? OLDEST_FIRST) {
    if ('column' in key) {
      if (seen.has(key.column)) continue;
      seen.add(key.column);
    }
    keys.push(key);
  }
  if (!seen.has('uuid')) keys.push({ column: 'uuid', direction: 'asc' });
  return keys;
}

export class EntryQuery {
  constructor(
    private readonly db: Kysely<DB>,
    private readonly quirks: EngineQuirks,
  ) {}

  /**
   * select is the query of a list: the matching entries, in its (total) order, after its cursor,
   * offset and limit applied; through `db` and with `check` first when run with a time limit. `resume`,
   * the order-key values of the entry a walk's previous page ended on, takes the cursor's place.
   */
  select(query: EntryListQuery, db = this.db, check?: Expression<SqlBool>, resume?: readonly unknown[]) {
    const order = totalOrder(query.order);
    const values = resume ?? (query.after ? cursorValues(order, query.after) : undefined);
    let select = this.matching(query, db, check, order, values);
    if (values) select = select.where(afterValues(order, values));
    for (const key of order) select = select.orderBy(keyExpression(key), key.direction);
    if (query.limit !== undefined) select = select.limit(query.limit);
    if (query.offset) {
      // SQLite accepts OFFSET only after a LIMIT; -1 is its "no limit".
      if (query.limit === undefined) select = select.limit(-1);
      select = select.offset(query.offset);
    }
    return select;
  }

  /**
   * matching is the unordered set of entries a list query's filter and condition select, with the
   * lower and upper bound of the timestamp (from `after`/`before`, `range` and, when the order starts
   * with the timestamp, the cursor `values`) as one condition each, so that the index range starts at
   * the tightest of them (see timestampBounds).
   */
  private matching(
    { filter = {}, where, range, scanText }: EntryListQuery,
    db: Kysely<DB>,
    check?: Expression<SqlBool>,
    order: readonly EntryOrderKey[] = OLDEST_FIRST,
    values?: readonly unknown[],
  ) {
    let select = db.selectFrom('entries').select(['entries.uuid', 'entries.text', 'entries.created_at', 'entries.state']);
    const state = filter.state ?? 'visible';
    if (state !== 'any') select = select.where('entries.state', '=', state);
    // Before every other condition, so that it is evaluated on every row the statement visits.
    if (check) select = select.where(check);
    const q = filter.q ? searchKey(filter.q) : '';
    if (q !== '') select = select.where(this.quirks.containsText(q, scanText));
    for (const bound of timestampBounds(filter, range, order, values)) select = select.where(bound);
    if (filter.singleLine) select = select.where('entries.text', 'not like', '%\n%').where('entries.text', 'not like', '%\r%');
    if (where) select = select.where(where);
    return select;
  }

  /** run executes a statement of `query`, within its time limit when it has one. */
  private run<T>(query: EntryListQuery, execute: (db: Kysely<DB>, check?: Expression<SqlBool>) => Promise<T>): Promise<T> {
    return query.timeLimitMs === undefined ? execute(this.db) : this.quirks.withTimeLimit(this.db, query.timeLimitMs, execute);
  }

  /** list reads the entries of a list query. */
  async list(query: EntryListQuery): Promise<ListedEntry[]> {
    return (await this.run(query, (db, check) => this.select(query, db, check).execute())).map(toListed);
  }

  /** count counts the entries a query selects (its order, offset and limit aside), after its cursor when given. */
  async count(query: EntryListQuery = {}): Promise<number> {
    const { count } = await this.run(query, (db, check) =>
      db
        .selectFrom(this.select({ filter: query.filter, where: query.where, range: query.range, order: query.order, after: query.after }, db, check).clearOrderBy().as('matches'))
        .select((eb) => eb.fn.countAll<number | string>().as('count'))
        .executeTakeFirstOrThrow(),
    );
    return Number(count);
  }

  /** page reads up to `limit` entries after `cursor`, oldest first. */
  page(filter: EntryFilter, limit: number, cursor?: EntryCursor): Promise<ListedEntry[]> {
    return this.list({ filter, limit, ...(cursor ? { after: cursor } : {}) });
  }

  /** pageBefore reads up to `limit` entries just before `cursor`, returned oldest first: the site's search paging backwards. */
  async pageBefore(filter: EntryFilter, limit: number, cursor: EntryCursor): Promise<ListedEntry[]> {
    return (await this.list({ filter, order: NEWEST_FIRST, after: cursor, limit })).reverse();
  }

  /**
   * searchPage is a page of the search page (routes/site/search.ts): up to `limit` entries after
   * `next`, or before `prev` (a full first page when fewer come before it), with the number of
   * matching entries and the position of the first shown among them (1-based).
   */
  async searchPage(filter: EntryFilter, limit: number, position: { next?: EntryCursor; prev?: EntryCursor }): Promise<SearchPage> {
    let found: ListedEntry[];
    if (position.prev) {
      found = await this.pageBefore(filter, limit, position.prev);
      if (found.length < limit) found = await this.page(filter, limit);
    } else {
      found = await this.page(filter, limit, position.next);
    }
    const total = await this.count({ filter });
    // Everything matching, minus what comes after the first shown.
    const first = found[0];
    const rank = first === undefined ? total + 1 : total - (await this.count({ filter, after: first }));
    return { found, total, rank };
  }

  /**
   * listPages walks a list query one page at a time, up to its limit, holding no query open between
   * pages, so a slow consumer (a slow download) never holds a connection and memory stays at one page.
   * Each page resumes after the order-key values of the previous page's last entry (keyset paging,
   * for any order), so no page re-sorts what earlier pages skipped, and the walk neither skips nor
   * repeats entries while others are added. Between pages the event loop is given back. Stopping the
   * iteration (a client that disconnects) stops the walk. `query.timeLimitMs` bounds the first page;
   * `laterTimeLimitMs`, when given, each later one.
   */
  async *listPages(query: EntryListQuery, pageSize = STREAM_PAGE_SIZE, laterTimeLimitMs?: number): AsyncGenerator<ListedEntry[]> {
    let remaining = query.limit ?? Number.POSITIVE_INFINITY;
    let resume: unknown[] | undefined;
    while (remaining > 0) {
      const limit = Math.min(pageSize, remaining);
      const { rows, seek } = await this.listPage(resume ? { ...query, timeLimitMs: laterTimeLimitMs } : query, limit, resume);
      if (rows.length > 0) yield rows;
      if (seek === null) return;
      remaining -= rows.length;
      resume = seek;
      // A consumer reading at full speed would otherwise chain every page in microtasks and hold the
      // event loop for the whole walk; between pages, every other request gets its turn.
      await giveWay();
    }
  }

  /**
   * listPage reads one page of a walk (listPages): up to `limit` entries of `query`, after the
   * order-key values `resume` of the previous page's last entry when given (its offset then already
   * applied), within `query.timeLimitMs`. `seek` is where the next page resumes, or null when this
   * page was the last. The values are plain data, so a walk can go on in another thread.
   */
  async listPage(query: EntryListQuery, limit: number, resume?: readonly unknown[]): Promise<{ rows: ListedEntry[]; seek: unknown[] | null }> {
    const order = totalOrder(query.order);
    const rows = (await this.run(query, (db, check) => {
      // Column keys are read back from the columns selected anyway; only expressions need their own.
      // A later page resumes from where the previous one ended, which is past the query's own cursor.
      const select = this.select({ ...query, limit, ...(resume ? { offset: 0 } : { scanText: undefined }) }, db, check, resume).select(
        order.flatMap((key, i) => ('column' in key ? [] : [sql`${keyExpression(key)}`.as(`k${i}`)])),
      );
      return select.execute();
    })) as unknown as (Record<string, unknown> & Parameters<typeof toListed>[0])[];
    const last = rows[rows.length - 1];
    const seek = rows.length < limit || last === undefined ? null : order.map((key, i) => ('column' in key ? last[key.column] : last[`k${i}`]));
    return { rows: rows.map(toListed), seek };
  }

  /**
   * pages walks every entry matching `filter`, oldest first (the export): a search term is found
   * through the index on the first page, and by testing rows in order from the cursor after it.
   */
  pages(filter: EntryFilter, pageSize = STREAM_PAGE_SIZE): AsyncGenerator<ListedEntry[]> {
    return this.listPages({ filter, scanText: true }, pageSize);
  }
}

function keyExpression(key: EntryOrderKey): Expression<unknown> {
  return 'column' in key ? sql.ref(`entries.${key.column}`) : key.expression;
}

/** cursorValues turns a cursor into the values of a keyset order's keys. */
function cursorValues(order: readonly EntryOrderKey[], cursor: EntryCursor): unknown[] {
  return order.map((key) => {
    if (!('column' in key)) throw new Error('a cursor resumes only an order of column keys (isKeysetOrder)');
    return key.column === 'uuid' ? cursor.uuid : cursor.timestamp;
  });
}

/**
 * afterValues is the condition "strictly after the entry whose order keys had these values": with
 * keys k1..kn, some ki is past its value while every key before it is equal. Every value is a bound
 * parameter. A null value (possible only for an expression key after a key that orders its nulls) is
 * equal to null and past nothing.
 */
function afterValues(order: readonly EntryOrderKey[], values: readonly unknown[]): Expression<SqlBool> {
  const alternatives: Expression<SqlBool>[] = [];
  const equalSoFar: Expression<SqlBool>[] = [];
  order.forEach((key, i) => {
    const expression = keyExpression(key);
    const value = values[i];
    if (value === null || value === undefined) {
      equalSoFar.push(sql<SqlBool>`${expression} is null`);
      return;
    }
    const past = key.direction === 'asc' ? sql<SqlBool>`${expression} > ${value}` : sql<SqlBool>`${expression} < ${value}`;
    alternatives.push(equalSoFar.length === 0 ? past : sql<SqlBool>`(${sql.join([...equalSoFar, past], sql` and `)})`);
    equalSoFar.push(sql<SqlBool>`${expression} = ${value}`);
  });
  if (alternatives.length === 0) return sql<SqlBool>`1 = 0`;
  const condition = sql<SqlBool>`(${sql.join(alternatives, sql` or `)})`;
  // The or-chain alone cannot seek an index on either engine, so each page would scan from the start
  // (a 200,000-entry CSV once took 10 s instead of 1); the redundant bound "first key at or past its
  // value" lets the index seek straight to the resume point. A timestamp first key has its bound in
  // timestampBounds instead, merged with the filter's.
  const first = order[0]!;
  const firstValue = values[0];
  if (firstValue === null || firstValue === undefined || startsWithTimestamp(order)) return condition;
  const expression = keyExpression(first);
  const bound = first.direction === 'asc' ? sql<SqlBool>`${expression} >= ${firstValue}` : sql<SqlBool>`${expression} <= ${firstValue}`;
  return sql<SqlBool>`(${bound} and ${condition})`;
}

function startsWithTimestamp(order: readonly EntryOrderKey[]): boolean {
  const first = order[0];
  return first !== undefined && 'column' in first && first.column === 'created_at';
}

const CREATED = sql.ref('entries.created_at');

/** A bound parameter as a 64-bit integer: PostgreSQL needs the type where two parameters meet. */
const bigint = (value: unknown) => sql`cast(${value} as bigint)`;

/**
 * timestampBounds is at most one lower and one upper bound on the timestamp: the tightest of the
 * filter's `after`/`before`, the `range`, and the cursor's timestamp when the order starts with it.
 * An engine seeks its index to one bound per side: SQLite picks one of several, and when it picks the
 * filter's instead of the cursor's, every page of a walk starts at the beginning of the range, so that
 * the walk costs the square of its length. The cursor's value is a parameter, not looked at here (an
 * export page's statement is prepared once and run with each page's cursor), so the larger of it and
 * the filter's bound is taken in SQL.
 */
function timestampBounds(filter: EntryFilter, range: TimestampRange | undefined, order: readonly EntryOrderKey[], values?: readonly unknown[]): Expression<SqlBool>[] {
  // Timestamps are whole seconds: "after a" is "from floor(a) + 1".
  const lows = [filter.after === undefined ? undefined : Math.floor(filter.after) + 1, range?.from].filter((v) => v !== undefined);
  const highs = [filter.before === undefined ? undefined : Math.ceil(filter.before) - 1, range?.to].filter((v) => v !== undefined);
  const low = lows.length === 0 ? undefined : Math.max(...lows);
  const high = highs.length === 0 ? undefined : Math.min(...highs);
  let cursorLow: unknown;
  let cursorHigh: unknown;
  if (values !== undefined && startsWithTimestamp(order) && values[0] !== null && values[0] !== undefined) {
    if (order[0]!.direction === 'asc') cursorLow = values[0];
    else cursorHigh = values[0];
  }
  const bounds: Expression<SqlBool>[] = [];
  if (cursorLow !== undefined && low !== undefined) {
    bounds.push(sql<SqlBool>`${CREATED} >= (case when ${bigint(cursorLow)} > ${bigint(low)} then ${bigint(cursorLow)} else ${bigint(low)} end)`);
  } else if (cursorLow !== undefined || low !== undefined) {
    bounds.push(sql<SqlBool>`${CREATED} >= ${cursorLow ?? low}`);
  }
  if (cursorHigh !== undefined && high !== undefined) {
    bounds.push(sql<SqlBool>`${CREATED} <= (case when ${bigint(cursorHigh)} < ${bigint(high)} then ${bigint(cursorHigh)} else ${bigint(high)} end)`);
  } else if (cursorHigh !== undefined || high !== undefined) {
    bounds.push(sql<SqlBool>`${CREATED} <= ${cursorHigh ?? high}`);
  }
  return bounds;
}
