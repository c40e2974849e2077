/**
 * The one query for lists of entries: which entries (a filter, plus an OData condition), in which
 * order, after which cursor, how many. The HTTP export, `nonsense export`, the OData feed, the site's
 * search and the admin search all read through `select`, so a filter and a page position mean the
 * same everywhere. Visible entries only, unless a filter asks for other states (the admin search).
 */
import { setImmediate as giveWay } from 'node:timers/promises';
import { sql, type Expression, type Kysely, type SqlBool } from 'kysely';
import type { EngineQuirks } from '../db/dialects/quirks.ts';
import { TimeLimitError } from '../db/time-limit.ts';
import type { DB, EntryState } from '../db/schema.ts';
import { pageSizeOf, type EntryCursor, type EntryFilter, type PageSizes } from '../domain/entry-selection.ts';
import { searchKey } from '../domain/search-text.ts';
import type { EntryRecord } from '../domain/records.ts';

export type { EntryCursor, EntryFilter, PageSizes } from '../domain/entry-selection.ts';
export { TimeLimitError };

/**
 * A count that stops: exactly `n`, or, with `over`, more than `n` (COUNT_CAP was reached). Null when
 * it was not counted within COUNT_TIME_MS.
 */
export type BoundedCount = { n: number; over: boolean } | null;

/**
 * A page of the search page: its entries, whether more come after them, how many match in all and
 * the first one's position among them (1-based; "over" when COUNT_CAP or more come before it).
 */
export interface SearchPage {
  found: ListedEntry[];
  more: boolean;
  total: BoundedCount;
  rank: BoundedCount;
}

/** The search page counts matches up to this many; beyond, it says "more than". */
export const COUNT_CAP = 1000;
/** How long each of the search page's counts may take; beyond, the page goes without it. */
const COUNT_TIME_MS = 100;
/** How long the search page walks the order for a term in many entries before it asks the index instead. */
const WALK_TIME_MS = 100;
/**
 * A term the search index finds in at most this many entries is matched through the index (its
 * matches read and sorted); one found in more, by walking the order and testing rows, which meets a
 * page's worth of matches soon. The search page, the admin search and the export choose alike.
 */
export const FEW_MATCHES = 2000;
/**
 * A page of a walk that tests rows in order (`scan`, listPage) tests at most this many, matching or
 * not, and ends there, with fewer entries than asked or none, when the term is rarer than the page
 * needs: so no page of an export holds its thread long, however rare the term in the rows it passes.
 */
export const SCAN_PAGE_ROWS = 20_000;
/**
 * The steps a page that tests rows in order takes them in, SCAN_PAGE_ROWS in all: each step's end is
 * read from the order index first, and a page that is full within its first steps (a term in many
 * entries) reads no further end. The page holds the same entries whatever the steps.
 */
export const SCAN_STEPS: readonly number[] = [SCAN_PAGE_ROWS / 8, SCAN_PAGE_ROWS / 8, SCAN_PAGE_ROWS / 4, SCAN_PAGE_ROWS / 2];
/** How long a term's count of index matches (textPlan) is kept: it changes only with many writes, and never the result. */
const PLAN_TTL_MS = 60_000;
const PLANS_KEPT = 256;

/** An entry of a list: the stored record and its state. */
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
  /** End at the entry at this position in `order`, included (a page of a bounded walk, listPage); needs a keyset order. */
  until?: EntryCursor;
  offset?: number;
  limit?: number;
  /** Each statement of the query may run this long; past it, it fails with TimeLimitError (db/time-limit.ts). */
  timeLimitMs?: number;
  /**
   * How `filter.q` is matched (textPlan chooses): `index`, through the search index alone, the
   * entries it finds then filtered and sorted (few matches); `scan`, by testing the rows the order
   * walks (many). By default, as the engine's containsText does.
   */
  textMatch?: TextMatch;
}

/** Inclusive bounds on the timestamp (Unix seconds); either may be absent. */
export interface TimestampRange {
  from?: number;
  to?: number;
}

export type TextMatch = 'index' | 'scan';

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

/** Offsets from which a list in the timestamp order is started at its span of time (skipByCounts) instead of walked to. */
export const SKIP_BY_COUNTS_FROM = 10_000;
/** The seconds of a span of `entry_time_counts` (migration 0010): 2^16. */
const SPAN_SECONDS = 65_536;

export class EntryQuery {
  /** What the search index found per term (textPlan): how many, up to FEW_MATCHES + 1. */
  private readonly plans = new Map<string, { found: number | null; until: number }>();

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
    const until = query.until ? cursorValues(order, query.until) : undefined;
    let select = this.matching(query, db, check, order, values, until);
    if (values) select = select.where(afterValues(order, values));
    if (until) select = select.where(notAfterValues(order, until));
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
    { filter = {}, where, range, textMatch }: EntryListQuery,
    db: Kysely<DB>,
    check?: Expression<SqlBool>,
    order: readonly EntryOrderKey[] = OLDEST_FIRST,
    values?: readonly unknown[],
    until?: readonly unknown[],
  ) {
    let select = db.selectFrom('entries').select(['entries.uuid', 'entries.text', 'entries.created_at', 'entries.state']);
    const q = filter.q ? searchKey(filter.q) : '';
    // Through the index, the state and the dates are tested on the few entries it finds: written so
    // that no index can serve them, or SQLite (which plans without statistics) walks the whole order
    // index testing each row against the index's matches, to spare itself a sort.
    const byIndex = q !== '' && textMatch === 'index';
    const state = filter.state ?? 'visible';
    if (state !== 'any') select = select.where(byIndex ? sql<string>`entries.state || ''` : sql.ref('entries.state'), '=', state);
    // Before every other condition, so that it is evaluated on every row the statement visits.
    if (check) select = select.where(check);
    if (q !== '') select = select.where(this.quirks.containsText(q, textMatch === 'scan'));
    const createdAt = byIndex ? sql<number>`entries.created_at + 0` : CREATED;
    for (const bound of timestampBounds(filter, range, order, values, until, createdAt)) select = select.where(bound);
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

  /**
   * textPlan chooses how a term is matched (EntryListQuery.textMatch): through the index when it
   * finds the term in FEW_MATCHES entries at most, else by testing rows in order; undefined when the
   * engine chooses by itself (quirks' countIndexMatches) or there is no term. The index is asked for
   * FEW_MATCHES + 1 entries at most, so the choice itself stops early; what it found is kept a minute.
   * The search page, the admin search and the export (each of its pages) all choose by it.
   */
  async textPlan(filter: EntryFilter): Promise<TextMatch | undefined> {
    const q = filter.q ? searchKey(filter.q) : '';
    if (q === '') return undefined;
    let kept = this.plans.get(q);
    if (kept === undefined || kept.until <= Date.now()) {
      const found = await this.quirks.countIndexMatches(this.db, q, FEW_MATCHES + 1);
      kept = { found, until: Date.now() + PLAN_TTL_MS };
      this.plans.delete(q);
      if (this.plans.size >= PLANS_KEPT) this.plans.delete(this.plans.keys().next().value!);
      this.plans.set(q, kept);
    }
    return kept.found === null ? undefined : kept.found > FEW_MATCHES ? 'scan' : 'index';
  }

  /**
   * searchPage is a page of the search page (routes/site/search.ts): up to `limit` entries after
   * `next`, or before `prev` (a full first page when fewer come before it), whether more come after
   * it, and, counted up to COUNT_CAP within COUNT_TIME_MS each, the number of matching entries and the
   * position of the first shown among them. Every read stops early: a page reads `limit` + 1 matches,
   * a count COUNT_CAP + 1.
   */
  async searchPage(filter: EntryFilter, limit: number, position: { next?: EntryCursor; prev?: EntryCursor }): Promise<SearchPage> {
    const textMatch = await this.textPlan(filter);
    const base: EntryListQuery = { filter, ...(textMatch ? { textMatch } : {}) };
    let found: ListedEntry[] | undefined;
    let more = false;
    let atStart = false;
    if (position.prev) {
      const before = (await this.walk({ ...base, order: NEWEST_FIRST, after: position.prev, limit })).reverse();
      if (before.length === limit) {
        found = before;
        more = (await this.walk({ ...base, after: before[before.length - 1]!, limit: 1 })).length > 0;
      }
    }
    if (found === undefined) {
      const after = position.prev ? undefined : position.next;
      const rows = await this.walk({ ...base, ...(after ? { after } : {}), limit: limit + 1 });
      found = rows.slice(0, limit);
      more = rows.length > limit;
      atStart = after === undefined;
    }
    const first = found[0];
    let rank: BoundedCount = { n: 1, over: false };
    if (first !== undefined && !atStart) {
      const before = await this.countUpTo({ ...base, order: NEWEST_FIRST, after: first }, COUNT_CAP);
      rank = before === null ? null : before >= COUNT_CAP ? { n: COUNT_CAP, over: true } : { n: before + 1, over: false };
    }
    let total: BoundedCount;
    if (rank?.over) total = { n: COUNT_CAP, over: true };
    else if (rank !== null && first !== undefined && !more) total = { n: rank.n + found.length - 1, over: false };
    else {
      const counted = await this.countUpTo(base, COUNT_CAP + 1, !(filter.after !== undefined || filter.before !== undefined));
      total = counted === null ? null : counted > COUNT_CAP ? { n: COUNT_CAP, over: true } : { n: counted, over: false };
    }
    return { found, more, total, rank };
  }

  /**
   * find lists the entries of a search (the admin search: any order of columns, a cursor, a limit)
   * by the plan the site's search page uses for its term (textPlan), each read stopping early.
   */
  async find(query: EntryListQuery): Promise<ListedEntry[]> {
    const textMatch = await this.textPlan(query.filter ?? {});
    return this.walk({ ...query, ...(textMatch ? { textMatch } : {}) });
  }

  /**
   * walk lists a search's entries. Testing rows in order finds a term in many entries soon, unless
   * the dates or the cursor leave few of them ahead: past WALK_TIME_MS the index's matches are read
   * and sorted instead, as for a term in few entries.
   */
  private async walk(query: EntryListQuery): Promise<ListedEntry[]> {
    if (query.textMatch !== 'scan') return this.list(query);
    try {
      return await this.list({ ...query, timeLimitMs: WALK_TIME_MS });
    } catch (error) {
      if (error instanceof TimeLimitError) return this.list({ ...query, textMatch: 'index' });
      throw error;
    }
  }

  /**
   * countUpTo counts the entries of `query` up to `cap`, in its order from its cursor, within
   * COUNT_TIME_MS; null past it. Testing rows in order (`scan`) meets `cap` matches soon for a term
   * in many entries, unless a date range holds few of them; without a cursor the index's matches are
   * then counted instead, each checked against the filter, which stops after `cap` of them or the
   * term's last: first when there are no dates (`overAll`), else once the walk has run out of time.
   */
  private async countUpTo(query: EntryListQuery, cap: number, overAll = false): Promise<number | null> {
    const byIndex = query.textMatch === 'scan' && !query.after;
    if (byIndex && overAll) return (await this.countIndexed(query, cap)) ?? this.countWalked(query, cap);
    const walked = await this.countWalked(query, cap);
    return walked === null && byIndex ? this.countIndexed(query, cap) : walked;
  }

  /** countWalked counts by the list's own statement (countUpTo). */
  private async countWalked(query: EntryListQuery, cap: number): Promise<number | null> {
    return this.withinCountTime(async () => {
      const { count } = await this.run({ timeLimitMs: COUNT_TIME_MS }, (db, check) => {
        // From a cursor the order walks away from it; without one, any order will do, and
        // PostgreSQL may then count through the trigram index.
        const matches = this.select({ ...query, limit: cap }, db, check);
        return db
          .selectFrom((query.after ? matches : matches.clearOrderBy()).as('matches'))
          .select((eb) => eb.fn.countAll<number | string>().as('count'))
          .executeTakeFirstOrThrow();
      });
      return Number(count);
    });
  }

  /** countIndexed counts the index's matches that meet the filter's state and dates (countUpTo); null where the engine has no such count. */
  private async countIndexed({ filter = {} }: EntryListQuery, cap: number): Promise<number | null> {
    const q = filter.q ? searchKey(filter.q) : '';
    const state = filter.state ?? 'visible';
    return this.withinCountTime(() =>
      this.run({ timeLimitMs: COUNT_TIME_MS }, (db, check) => {
        const conditions = [
          ...(check ? [check] : []),
          ...(state !== 'any' ? [sql<SqlBool>`entries.state = ${state}`] : []),
          ...(filter.after !== undefined ? [sql<SqlBool>`entries.created_at > ${filter.after}`] : []),
          ...(filter.before !== undefined ? [sql<SqlBool>`entries.created_at < ${filter.before}`] : []),
          ...(filter.singleLine ? [sql<SqlBool>`entries.text not like ${'%\n%'} and entries.text not like ${'%\r%'}`] : []),
        ];
        return this.quirks.countIndexMatches(db, q, cap, conditions.length > 0 ? sql<SqlBool>`${sql.join(conditions, sql` and `)}` : undefined);
      }),
    );
  }

  /** withinCountTime is a count's result, or null when it ran out of time. */
  private async withinCountTime(count: () => Promise<number | null>): Promise<number | null> {
    try {
      return await count();
    } catch (error) {
      if (error instanceof TimeLimitError) return null;
      throw error;
    }
  }

  /**
   * listPages walks a list query one page at a time, up to its limit, holding no query open between
   * pages, so a slow consumer (a slow download) never holds a connection and memory stays at one page.
   * Each page resumes after the order-key values of the previous page's last entry (keyset paging,
   * for any order), so no page re-sorts what earlier pages skipped, and the walk neither skips nor
   * repeats entries while others are added. Between pages the event loop is given back. Stopping the
   * iteration (a client that disconnects) stops the walk. `query.timeLimitMs` bounds the first page;
   * `laterTimeLimitMs`, when given, each later one. A page that tests rows in order may end short, or
   * empty, before the walk does (listPage); only pages with entries are yielded.
   */
  async *listPages(query: EntryListQuery, pageSize: PageSizes = STREAM_PAGE_SIZE, laterTimeLimitMs?: number): AsyncGenerator<ListedEntry[]> {
    let remaining = query.limit ?? Number.POSITIVE_INFINITY;
    let resume: unknown[] | undefined;
    for (let page = 0; remaining > 0; page++) {
      const limit = Math.min(pageSizeOf(pageSize, page), remaining);
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
   * skipByCounts makes a large offset small where the list selects every visible entry (no term, no
   * condition, no range, no cursor) in an order that starts with the timestamp: the counts of
   * visible entries per span of time (migration 0010) tell the span the offset falls in and how many
   * come before it, and the list then starts at that span's first second with the rest of the offset,
   * which walks one span at most instead of every entry before it. The same entries as the walk, and
   * the same query where the shortcut does not apply or would not pay (an offset under
   * SKIP_BY_COUNTS_FROM).
   */
  async skipByCounts(query: EntryListQuery, db = this.db): Promise<EntryListQuery> {
    const offset = query.offset ?? 0;
    const { state = 'visible', ...narrowing } = query.filter ?? {};
    const first = totalOrder(query.order)[0]!;
    const applies =
      offset >= SKIP_BY_COUNTS_FROM &&
      state === 'visible' &&
      Object.values(narrowing).every((value) => value === undefined || value === '' || value === false) &&
      query.where === undefined &&
      query.range === undefined &&
      query.after === undefined &&
      query.until === undefined &&
      'column' in first &&
      first.column === 'created_at';
    if (!applies) return query;
    const oldestFirst = first.direction === 'asc';
    const spans = await db
      .selectFrom('entry_time_counts')
      .select(['span', 'visible'])
      .where('visible', '>', 0)
      .orderBy('span', oldestFirst ? 'asc' : 'desc')
      .execute();
    let before = 0;
    let span: number | undefined;
    for (const row of spans) {
      span = Number(row.span);
      const visible = Number(row.visible);
      if (before + visible > offset) break;
      before += visible;
      // Past the last span: the range starts beyond every entry, and the list is empty.
      span += oldestFirst ? 1 : -1;
    }
    if (span === undefined) return query;
    const range = oldestFirst ? { from: span * SPAN_SECONDS } : { to: (span + 1) * SPAN_SECONDS - 1 };
    return { ...query, range, offset: offset - before };
  }

  /**
   * listPage reads one page of a walk (listPages): up to `limit` entries of `query`, after the
   * order-key values `resume` of the previous page's last entry when given (its offset then already
   * applied), within `query.timeLimitMs`. `seek` is where the next page resumes, or null when this
   * page was the last. The values are plain data, so a walk can go on in another thread. A page that
   * tests rows in order (`scan`) tests SCAN_PAGE_ROWS at most, in SCAN_STEPS (scanBound): past them
   * it ends, short of `limit` or empty, and the next page resumes after the last row it tested.
   */
  async listPage(query: EntryListQuery, limit: number, resume?: readonly unknown[]): Promise<{ rows: ListedEntry[]; seek: unknown[] | null }> {
    type Row = Record<string, unknown> & Parameters<typeof toListed>[0];
    const order = totalOrder(query.order);
    // A later page resumes from where the previous one ended, which is past the query's own cursor.
    const page: EntryListQuery = { ...query, ...(resume ? { offset: 0 } : {}) };
    const steps = scansInPages(page) ? SCAN_STEPS : [undefined];
    const rows: Row[] = [];
    let from = resume;
    let until: EntryCursor | undefined;
    await this.run(query, async (db, check) => {
      for (const step of steps) {
        const end = step === undefined ? undefined : await this.scanBound(page, step, db, from).executeTakeFirst();
        until = end && { timestamp: Number(end.created_at), uuid: end.uuid };
        // Column keys are read back from the columns selected anyway; only expressions need their own.
        const select = this.select({ ...page, limit: limit - rows.length, ...(until ? { until } : {}) }, db, check, from).select(
          order.flatMap((key, i) => ('column' in key ? [] : [sql`${keyExpression(key)}`.as(`k${i}`)])),
        );
        rows.push(...((await select.execute()) as unknown as Row[]));
        if (rows.length === limit || until === undefined) return;
        from = cursorValues(order, until);
      }
    });
    const last = rows[rows.length - 1];
    let seek: unknown[] | null = null;
    if (rows.length === limit && last !== undefined) seek = order.map((key, i) => ('column' in key ? last[key.column] : last[`k${i}`]));
    else if (until) seek = cursorValues(order, until);
    return { rows: rows.map(toListed), seek };
  }

  /**
   * scanBound is the statement of where a step of a page that tests rows in order stops (listPage):
   * the position of the `rows`-th entry from the step's start among all those of the filter's states
   * and dates, matching the term or not; no row when fewer remain. It reads the order index alone
   * (state, timestamp, uuid), no entry. The read workers prepare it as it is.
   */
  scanBound(query: EntryListQuery, rows: number, db = this.db, resume?: readonly unknown[]) {
    const { q: _q, singleLine: _singleLine, ...plain } = query.filter ?? {};
    const walked: EntryListQuery = { filter: plain, order: query.order, offset: rows - 1, limit: 1 };
    if (query.range) walked.range = query.range;
    if (query.after) walked.after = query.after;
    return this.select(walked, db, undefined, resume).clearSelect().select(['entries.created_at', 'entries.uuid']);
  }

  /**
   * pages walks every entry matching `filter`, oldest first (the export), in pages of `pageSize`: a
   * search term found in few entries through the index, one found in many by testing rows in order
   * (textPlan, as the search page chooses), so that the first page, like each after it, stops early.
   */
  async *pages(filter: EntryFilter, pageSize: PageSizes = STREAM_PAGE_SIZE): AsyncGenerator<ListedEntry[]> {
    const textMatch = await this.textPlan(filter);
    yield* this.listPages({ filter, ...(textMatch ? { textMatch } : {}) }, pageSize);
  }
}

/**
 * scansInPages tells whether a page of `query` tests rows in order and so is bounded by scanBound:
 * the term matched by `scan`, an order of columns, no offset (an offset counts matches, not rows).
 */
export function scansInPages(query: EntryListQuery): boolean {
  return query.textMatch === 'scan' && isKeysetOrder(query.order) && !query.offset;
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

/**
 * notAfterValues is the condition "at or before the entry whose column order keys had these values"
 * (EntryListQuery.until): some key before its value while every key before it is equal, or all equal.
 * A timestamp first key has its bound in timestampBounds, merged with the filter's; another first key
 * gets the redundant bound an index stops at, as in afterValues.
 */
function notAfterValues(order: readonly EntryOrderKey[], values: readonly unknown[]): Expression<SqlBool> {
  const alternatives: Expression<SqlBool>[] = [];
  const equalSoFar: Expression<SqlBool>[] = [];
  order.forEach((key, i) => {
    const expression = keyExpression(key);
    const before = key.direction === 'asc' ? sql<SqlBool>`${expression} < ${values[i]}` : sql<SqlBool>`${expression} > ${values[i]}`;
    alternatives.push(equalSoFar.length === 0 ? before : sql<SqlBool>`(${sql.join([...equalSoFar, before], sql` and `)})`);
    equalSoFar.push(sql<SqlBool>`${expression} = ${values[i]}`);
  });
  alternatives.push(sql<SqlBool>`(${sql.join(equalSoFar, sql` and `)})`);
  const condition = sql<SqlBool>`(${sql.join(alternatives, sql` or `)})`;
  if (startsWithTimestamp(order)) return condition;
  const first = keyExpression(order[0]!);
  const bound = order[0]!.direction === 'asc' ? sql<SqlBool>`${first} <= ${values[0]}` : sql<SqlBool>`${first} >= ${values[0]}`;
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
 * filter's `after`/`before`, the `range`, and the cursor's timestamp (and the `until` position's, on
 * the other side) when the order starts with it.
 * An engine seeks its index to one bound per side: SQLite picks one of several, and when it picks the
 * filter's instead of the cursor's, every page of a walk starts at the beginning of the range, so that
 * the walk costs the square of its length. The cursor's value is a parameter, not looked at here (an
 * export page's statement is prepared once and run with each page's cursor), so the larger of it and
 * the filter's bound is taken in SQL.
 */
function timestampBounds(
  filter: EntryFilter,
  range: TimestampRange | undefined,
  order: readonly EntryOrderKey[],
  values: readonly unknown[] | undefined,
  until: readonly unknown[] | undefined,
  created: Expression<unknown>,
): Expression<SqlBool>[] {
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
  if (until !== undefined && startsWithTimestamp(order)) {
    if (order[0]!.direction === 'asc') cursorHigh = until[0];
    else cursorLow = until[0];
  }
  const bounds: Expression<SqlBool>[] = [];
  if (cursorLow !== undefined && low !== undefined) {
    bounds.push(sql<SqlBool>`${created} >= (case when ${bigint(cursorLow)} > ${bigint(low)} then ${bigint(cursorLow)} else ${bigint(low)} end)`);
  } else if (cursorLow !== undefined || low !== undefined) {
    bounds.push(sql<SqlBool>`${created} >= ${cursorLow ?? low}`);
  }
  if (cursorHigh !== undefined && high !== undefined) {
    bounds.push(sql<SqlBool>`${created} <= (case when ${bigint(cursorHigh)} < ${bigint(high)} then ${bigint(cursorHigh)} else ${bigint(high)} end)`);
  } else if (cursorHigh !== undefined || high !== undefined) {
    bounds.push(sql<SqlBool>`${created} <= ${cursorHigh ?? high}`);
  }
  return bounds;
}
