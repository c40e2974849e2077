/**
 * The reads of the OData interface as plain data: which entries (`$filter`, `$orderby`, `$skiptoken`,
 * `$skip`, parsed but not compiled) and what of them (a list, a count, one page of a walk). Plain
 * data crosses to a read worker (services/read-workers), which compiles and runs it on its own
 * connection to the embedded database; on PostgreSQL the same function runs on the event loop, whose
 * driver waits without holding it. Either way every read reports the database time it took, so that
 * a client's OData reads can be charged to its budget (plugins/fair-share.ts).
 */
import type { EngineQuirks } from '../db/dialects/quirks.ts';
import type { EntryCursor } from '../domain/entry-selection.ts';
import type { ExpressionNode, OrderByItem } from '../domain/odata/expression.ts';
import { compileFilterWithRange, compileOrderBy, type CompileContext } from './odata-filter.ts';
import type { EntryListQuery, EntryQuery, ListedEntry } from './entry-query.ts';

/** The entries an OData request selects, before compiling. */
export interface ODataSelection {
  filter?: ExpressionNode;
  orderBy?: OrderByItem[];
  /** `$skiptoken`: after this entry (only for an order by columns). */
  after?: EntryCursor;
  /** `$skip`. */
  offset?: number;
}

/** What an OData request reads: a list, a count of the filter's matches, or one page of a walk. */
export type ODataRead =
  | { kind: 'list'; selection: ODataSelection; limit: number; timeLimitMs: number }
  | { kind: 'count'; selection: ODataSelection; timeLimitMs: number }
  | {
      kind: 'page';
      selection: ODataSelection;
      /** Entries of this page at most. */
      limit: number;
      /** Where the previous page ended (EntryQuery.listPage); absent for the first. */
      resume?: unknown[];
      /** Absent: no limit (a walk by index, which costs the same small amount per page). */
      timeLimitMs?: number;
    };

export interface WalkPage {
  rows: ListedEntry[];
  seek: unknown[] | null;
}

/** The answer to a read of each kind. */
export type ODataAnswer<R extends ODataRead> = R extends { kind: 'list' } ? ListedEntry[] : R extends { kind: 'count' } ? number : WalkPage;

/** listQueryOf compiles a selection for the entry query; an invalid one throws ODataRequestError (a 400). */
export function listQueryOf(selection: ODataSelection, context: CompileContext): EntryListQuery {
  const query: EntryListQuery = {};
  if (selection.filter) Object.assign(query, compileFilterWithRange(selection.filter, context));
  if (selection.orderBy) query.order = compileOrderBy(selection.orderBy, context);
  if (selection.after) query.after = selection.after;
  if (selection.offset) query.offset = selection.offset;
  return query;
}

/** runODataRead runs a read through `entries`, compiled for `quirks`, and says how long it took. */
export async function runODataRead<R extends ODataRead>(
  entries: EntryQuery,
  quirks: EngineQuirks,
  variableTokens: readonly string[],
  read: R,
): Promise<ODataAnswer<R>> {
  const compiled = listQueryOf(read.selection, { quirks, variableTokens });
  // A deep `$skip` in the timestamp order starts at its span of time, told by the counts; a walk's later page has no offset.
  const query = read.kind === 'count' || (read.kind === 'page' && read.resume !== undefined) ? compiled : await entries.skipByCounts(compiled);
  switch (read.kind) {
    case 'list':
      return (await entries.list({ ...query, limit: read.limit, timeLimitMs: read.timeLimitMs })) as ODataAnswer<R>;
    case 'count':
      // A count counts what the filter selects, across every page.
      return (await entries.count({ where: query.where, range: query.range, timeLimitMs: read.timeLimitMs })) as ODataAnswer<R>;
    case 'page':
      return (await entries.listPage({ ...query, ...(read.timeLimitMs === undefined ? {} : { timeLimitMs: read.timeLimitMs }) }, read.limit, read.resume)) as ODataAnswer<R>;
  }
  throw new Error('unknown OData read');
}
