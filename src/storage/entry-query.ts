/**
 * The one query builder for lists of entries: filters, order and paging. The HTTP export, the
 * `nonsense export` command, the OData feed and the web pages all read entries through it, so a
 * filter means the same everywhere. Only visible entries are ever returned.
 */
import { sql, type Expression, type Kysely, type SqlBool } from 'kysely';
import type { EngineQuirks } from '../db/dialects/quirks.ts';
import type { DB } from '../db/schema.ts';
import { textKey } from '../domain/text.ts';
import type { EntryRecord } from './entries.ts';

export interface EntryFilter {
  /** Case-insensitive, Unicode-aware substring of the raw text; empty means no filter. */
  q?: string;
  /** Only entries with timestamp > after (Unix seconds). */
  after?: number;
  /** Only entries with timestamp < before (Unix seconds). */
  before?: number;
  /** Only entries without a line break. */
  singleLine?: boolean;
}

/** Where to resume an ordered walk: the (timestamp, uuid) of the last entry seen. */
export interface EntryCursor {
  timestamp: number;
  uuid: string;
}

/** How many rows one page of a streamed walk reads; the connection is free between pages. */
export const STREAM_PAGE_SIZE = 500;

/**
 * One key of an arbitrary order (the OData `$orderby`). Keys on the immutable columns `created_at`
 * and `uuid` can be resumed from an `EntryCursor` (keyset paging); an expression key cannot.
 */
export type EntryOrderKey =
  | { column: 'created_at' | 'uuid'; direction: 'asc' | 'desc' }
  /** An expression that is never null, or is preceded by a key putting its nulls apart (null first or last). */
  | { expression: Expression<unknown>; direction: 'asc' | 'desc' };

/** A list query beyond the export's filters: a condition, any order, offset and limit. */
export interface EntryListQuery {
  /** A condition on `entries`, in addition to the visibility rule. */
  where?: Expression<SqlBool>;
  /** The order; default created_at then uuid. `uuid` ascending always ends it, so the order is total. */
  order?: readonly EntryOrderKey[];
  /** Resume after the entry at this position in `order`; needs a keyset order (see isKeysetOrder). */
  after?: EntryCursor;
  offset?: number;
  limit?: number;
}

const DEFAULT_ORDER: readonly EntryOrderKey[] = [
  { column: 'created_at', direction: 'asc' },
  { column: 'uuid', direction: 'asc' },
];

/** isKeysetOrder tells whether an order can be resumed from an `EntryCursor` (timestamp, uuid): it has column keys only. */
export function isKeysetOrder(order: readonly EntryOrderKey[] | undefined): boolean {
  return (order ?? DEFAULT_ORDER).every((key) => 'column' in key);
}

/**
 * totalOrder appends `uuid` ascending unless uuid already orders, and drops repeated columns
 * (`$orderby=timestamp,created` names one column twice), so that every order is strict and total.
 */
function totalOrder(order: readonly EntryOrderKey[] | undefined): EntryOrderKey[] {
  const keys: EntryOrderKey[] = [];
  const seen = new Set<string>();
  for (const key of order ?? DEFAULT_ORDER) {
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
   * select returns the base query: visible entries matching `filter`, in export order
   * (timestamp, then uuid), starting after `cursor` when given.
   */
  select(filter: EntryFilter, cursor?: EntryCursor) {
    let query = this.db
      .selectFrom('entries')
      .select(['entries.uuid', 'entries.text', 'entries.created_at'])
      .where('entries.state', '=', 'visible');
    const q = filter.q ? textKey(filter.q) : '';
    if (q !== '') query = query.where(this.quirks.containsText(q));
    if (filter.after !== undefined) query = query.where('entries.created_at', '>', filter.after);
    if (filter.before !== undefined) query = query.where('entries.created_at', '<', filter.before);
    if (filter.singleLine) {
      query = query.where('entries.text', 'not like', '%\n%').where('entries.text', 'not like', '%\r%');
    }
    if (cursor) {
      // The redundant `created_at >=` bound lets both engines seek the (state, created_at, uuid) index
      // to the cursor; with the OR alone they scan from the first entry on every page, which made a
      // full export quadratic (a 200,000-entry CSV took 10 s instead of 1).
      query = query.where('entries.created_at', '>=', cursor.timestamp).where((eb) =>
        eb.or([
          eb('entries.created_at', '>', cursor.timestamp),
          eb.and([eb('entries.created_at', '=', cursor.timestamp), eb('entries.uuid', '>', cursor.uuid)]),
        ]),
      );
    }
    return query.orderBy('entries.created_at', 'asc').orderBy('entries.uuid', 'asc');
  }

  /** page reads up to `limit` entries after `cursor`. */
  async page(filter: EntryFilter, limit: number, cursor?: EntryCursor): Promise<EntryRecord[]> {
    const rows = await this.select(filter, cursor).limit(limit).execute();
    return rows.map((row) => ({ uuid: row.uuid, text: row.text, timestamp: Number(row.created_at) }));
  }

  /**
   * pageBefore reads up to `limit` entries just before `cursor`, returned in export order; the web
   * search uses it to page backwards with the same keyset as `page`.
   */
  async pageBefore(filter: EntryFilter, limit: number, cursor: EntryCursor): Promise<EntryRecord[]> {
    const rows = await this.select(filter)
      // As in `select`: the bound lets the index seek to the cursor.
      .where('entries.created_at', '<=', cursor.timestamp)
      .where((eb) =>
        eb.or([
          eb('entries.created_at', '<', cursor.timestamp),
          eb.and([eb('entries.created_at', '=', cursor.timestamp), eb('entries.uuid', '<', cursor.uuid)]),
        ]),
      )
      .clearOrderBy()
      .orderBy('entries.created_at', 'desc')
      .orderBy('entries.uuid', 'desc')
      .limit(limit)
      .execute();
    return rows.reverse().map((row) => ({ uuid: row.uuid, text: row.text, timestamp: Number(row.created_at) }));
  }

  /**
   * countMatching counts the visible entries matching `filter` (after `cursor` when given). It counts
   * over `select` itself, so the count can never disagree with the pages.
   */
  async countMatching(filter: EntryFilter, cursor?: EntryCursor): Promise<number> {
    const { count } = await this.db
      .selectFrom(this.select(filter, cursor).clearOrderBy().as('matches'))
      .select((eb) => eb.fn.countAll<number | string>().as('count'))
      .executeTakeFirstOrThrow();
    return Number(count);
  }

  /**
   * selectList returns the query for a list: visible entries matching `query.where`, in `query.order`
   * (made total), after `query.after`, with offset and limit applied.
   */
  selectList(query: EntryListQuery) {
    const order = totalOrder(query.order);
    let select = this.db
      .selectFrom('entries')
      .select(['entries.uuid', 'entries.text', 'entries.created_at'])
      .where('entries.state', '=', 'visible');
    if (query.where) select = select.where(query.where);
    if (query.after) select = select.where(afterCursor(order, query.after));
    for (const key of order) {
      select = select.orderBy('column' in key ? sql.ref(`entries.${key.column}`) : key.expression, key.direction);
    }
    if (query.limit !== undefined) select = select.limit(query.limit);
    if (query.offset) {
      // SQLite accepts OFFSET only after a LIMIT; -1 is its "no limit".
      if (query.limit === undefined) select = select.limit(-1);
      select = select.offset(query.offset);
    }
    return select;
  }

  /** list reads the entries of a list query. */
  async list(query: EntryListQuery): Promise<EntryRecord[]> {
    const rows = await this.selectList(query).execute();
    return rows.map((row) => ({ uuid: row.uuid, text: row.text, timestamp: Number(row.created_at) }));
  }

  /** count counts the visible entries matching `where`. */
  async count(where?: Expression<SqlBool>): Promise<number> {
    let select = this.db
      .selectFrom('entries')
      .select((eb) => eb.fn.countAll<number | string>().as('count'))
      .where('entries.state', '=', 'visible');
    if (where) select = select.where(where);
    const { count } = await select.executeTakeFirstOrThrow();
    return Number(count);
  }

  /**
   * listPages walks a list query one page at a time, up to its limit, holding no query open between
   * pages (like `pages`). Each page resumes after the order-key values of the previous page's last
   * entry (keyset paging, for any order), so no page re-sorts what earlier pages skipped, and the
   * walk neither skips nor repeats entries while others are added.
   */
  async *listPages(query: EntryListQuery, pageSize = STREAM_PAGE_SIZE): AsyncGenerator<EntryRecord[]> {
    const order = totalOrder(query.order);
    let remaining = query.limit ?? Number.POSITIVE_INFINITY;
    let seek: unknown[] | undefined;
    while (remaining > 0) {
      const limit = Math.min(pageSize, remaining);
      let select = this.selectList({ ...query, limit, ...(seek ? { offset: 0 } : {}) }).select(
        order.map((key, i) => sql`${keyExpression(key)}`.as(`k${i}`)),
      );
      if (seek) select = select.where(afterValues(order, seek));
      const rows = (await select.execute()) as unknown as (Record<string, unknown> & { uuid: string; text: string; created_at: number })[];
      if (rows.length > 0) yield rows.map((row) => ({ uuid: row.uuid, text: row.text, timestamp: Number(row.created_at) }));
      if (rows.length < limit) return;
      remaining -= rows.length;
      const last = rows[rows.length - 1]!;
      seek = order.map((_, i) => last[`k${i}`]);
    }
  }

  /**
   * pages walks every matching entry in order, one page at a time. Between pages no query is open,
   * so a slow consumer (a slow download) never holds a connection, and memory stays at one page.
   * Stopping the iteration (a client that disconnects) stops the walk.
   */
  async *pages(filter: EntryFilter, pageSize = STREAM_PAGE_SIZE): AsyncGenerator<EntryRecord[]> {
    let cursor: EntryCursor | undefined;
    for (;;) {
      const page = await this.page(filter, pageSize, cursor);
      if (page.length > 0) yield page;
      if (page.length < pageSize) return;
      const last = page[page.length - 1]!;
      cursor = { timestamp: last.timestamp, uuid: last.uuid };
    }
  }
}

function keyExpression(key: EntryOrderKey): Expression<unknown> {
  return 'column' in key ? sql.ref(`entries.${key.column}`) : key.expression;
}

/**
 * afterValues is the condition "strictly after the entry whose order keys had these values". A null
 * value (possible only for an expression key after a key that orders its nulls) is equal to null and
 * past nothing.
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
  return withLeadingBound(order[0]!, keyExpression(order[0]!), values[0], sql<SqlBool>`(${sql.join(alternatives, sql` or `)})`);
}

/**
 * withLeadingBound adds the redundant bound "first key at or past its value" in front of an
 * after-condition. The or-chain alone cannot seek an index on either engine, so each page would scan
 * from the start; the bound lets the index seek straight to the resume point.
 */
function withLeadingBound(first: EntryOrderKey, expression: Expression<unknown>, value: unknown, condition: Expression<SqlBool>): Expression<SqlBool> {
  if (value === null || value === undefined) return condition;
  const bound = first.direction === 'asc' ? sql<SqlBool>`${expression} >= ${value}` : sql<SqlBool>`${expression} <= ${value}`;
  return sql<SqlBool>`(${bound} and ${condition})`;
}

/**
 * afterCursor is the condition "strictly after the cursor in this order": with keys k1..kn, some ki is
 * past the cursor's value while every key before it is equal. Every value is a bound parameter.
 */
function afterCursor(order: readonly EntryOrderKey[], cursor: EntryCursor): Expression<SqlBool> {
  const alternatives: Expression<SqlBool>[] = [];
  const equalSoFar: Expression<SqlBool>[] = [];
  for (const key of order) {
    if (!('column' in key)) throw new Error('afterCursor needs an order of column keys (isKeysetOrder)');
    const column = sql.ref(`entries.${key.column}`);
    const value = key.column === 'uuid' ? cursor.uuid : cursor.timestamp;
    const past = key.direction === 'asc' ? sql<SqlBool>`${column} > ${value}` : sql<SqlBool>`${column} < ${value}`;
    alternatives.push(equalSoFar.length === 0 ? past : sql<SqlBool>`(${sql.join([...equalSoFar, past], sql` and `)})`);
    equalSoFar.push(sql<SqlBool>`${column} = ${value}`);
  }
  const first = order[0]!;
  const firstValue = 'column' in first && first.column === 'uuid' ? cursor.uuid : cursor.timestamp;
  return withLeadingBound(first, keyExpression(first), firstValue, sql<SqlBool>`(${sql.join(alternatives, sql` or `)})`);
}
