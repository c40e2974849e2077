/**
 * The one query builder for lists of entries: filters, order and paging. The HTTP export, the
 * `nonsense export` command, the OData feed and the web pages all read entries through it, so a
 * filter means the same everywhere. Only visible entries are ever returned.
 */
import type { Kysely } from 'kysely';
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
      query = query.where((eb) =>
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
