/**
 * Which entries a list asks for, and where a walk through them resumes. The export, the command line,
 * the site's search, the admin search and OData all say it this way; `storage/entry-query.ts` turns
 * it into SQL.
 */
import { parseUuid } from './uuid.ts';

export type EntryStateFilter = 'visible' | 'hidden' | 'any';

export interface EntryFilter {
  /** Case-insensitive, Unicode-aware substring of the raw text (domain/search-text.ts); empty means no filter. */
  q?: string;
  /** Only entries with timestamp > after (Unix seconds). */
  after?: number;
  /** Only entries with timestamp < before (Unix seconds). */
  before?: number;
  /** Only entries without a line break. */
  singleLine?: boolean;
  /** Which states to include; default: visible only. Only the admin API asks for more. */
  state?: EntryStateFilter;
}

/** A position in the (timestamp, uuid) order: the last entry of the previous page. */
export interface EntryCursor {
  /** Unix seconds. */
  timestamp: number;
  uuid: string;
}

/** encodeCursor writes a cursor as it travels in links: `<timestamp>.<uuid>`. */
export function encodeCursor(cursor: EntryCursor): string {
  return `${cursor.timestamp}.${cursor.uuid}`;
}

/** parseCursor reads what encodeCursor wrote; null for anything else. */
export function parseCursor(text: string): EntryCursor | null {
  const match = /^(\d{1,15})\.(.{36})$/.exec(text);
  const uuid = match ? parseUuid(match[2]!) : null;
  return match && uuid ? { timestamp: Number(match[1]), uuid } : null;
}

/**
 * How many entries each page of a walk holds, by its number (0 for the first): one size for every
 * page, or a schedule (the export's: formats/export.ts exportPageSize). A walk that reads its pages in
 * another thread and one that reads them on the event loop follow the same schedule, so that they cut
 * a file at the same places.
 */
export type PageSizes = number | ((page: number) => number);

/** pageSizeOf is the size of page `page` (0 for the first) of a walk by `sizes`. */
export function pageSizeOf(sizes: PageSizes, page: number): number {
  return typeof sizes === 'number' ? sizes : sizes(page);
}
