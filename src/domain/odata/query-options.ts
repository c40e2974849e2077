/**
 * The query options of an OData v2 request, parsed and checked in one place: system options
 * (`$filter`, `$orderby`, `$select`, `$top`, `$skip`, `$skiptoken`, `$inlinecount`, `$format`,
 * `$expand`), and the service's own `all`. Unknown `$` options are refused (OData reserves them, and a
 * silently ignored `$search` would answer a different question); other custom options are ignored.
 */
import { ODataRequestError } from './errors.ts';
import { parseCursor, type EntryCursor } from '../entry-selection.ts';
import { parseFilter, parseOrderBy, type ExpressionNode, type OrderByItem } from './expression.ts';
import { PROPERTY_NAMES, propertyNamed, type PropertyName } from './model.ts';

export type ODataFormat = 'atom' | 'json';

export interface ODataQuery {
  filter?: ExpressionNode;
  orderBy?: OrderByItem[];
  /** The properties to return, in model order; all when `$select` is absent or `*`. */
  select: PropertyName[];
  top?: number;
  skip?: number;
  /** `$skiptoken`: the position after which the page starts, encoded like every page position (domain/entry-selection.ts). */
  skipToken?: EntryCursor;
  inlineCount: boolean;
  /** Only when `$format` was given; otherwise the Accept header decides. */
  format?: ODataFormat;
  /** `all=true`: the whole result in one response instead of pages. */
  all: boolean;
}

const KNOWN = new Set(['$filter', '$orderby', '$select', '$top', '$skip', '$skiptoken', '$inlinecount', '$format', '$expand']);

/** The largest $top/$skip taken; past it the number means nothing for a table of this size. */
const MAX_COUNT = 2 ** 31 - 1;

function decodeSkipToken(text: string): EntryCursor {
  const cursor = parseCursor(text);
  if (cursor === null) throw new ODataRequestError(`The $skiptoken "${text.slice(0, 80)}" is not one this service gave out; follow the next link of a previous page.`);
  return cursor;
}

function count(name: string, text: string): number {
  if (!/^\d+$/.test(text) || Number(text) > MAX_COUNT) {
    throw new ODataRequestError(`The option ${name} must be a non-negative integer (at most ${MAX_COUNT}); got "${text.slice(0, 40)}".`);
  }
  return Number(text);
}

function parseSelect(text: string): PropertyName[] {
  const names = text.split(',').map((part) => part.trim());
  if (names.includes('*') || text.trim() === '') return [...PROPERTY_NAMES];
  const wanted = new Set<string>();
  for (const name of names) {
    if (name === '') throw new ODataRequestError('The option $select has an empty item; separate property names with single commas.');
    if (!propertyNamed(name)) {
      throw new ODataRequestError(`Unknown property '${name.slice(0, 60)}' in $select; the properties are ${PROPERTY_NAMES.join(', ')}.`);
    }
    wanted.add(name);
  }
  return PROPERTY_NAMES.filter((name) => wanted.has(name));
}

function parseFormat(text: string): ODataFormat {
  switch (text.trim().toLowerCase()) {
    case 'json':
    case 'application/json':
      return 'json';
    case 'atom':
    case 'xml':
    case 'application/atom+xml':
    case 'application/xml':
      return 'atom';
    default:
      throw new ODataRequestError(`The option $format must be json, atom or xml; got "${text.slice(0, 40)}".`);
  }
}

/** single returns one value of a query parameter, refusing repeats (which would be ambiguous). */
function single(raw: Record<string, unknown>, name: string): string | undefined {
  const value = raw[name];
  if (value === undefined) return undefined;
  if (Array.isArray(value)) throw new ODataRequestError(`The option ${name} is given more than once; give it once.`);
  return String(value);
}

/** requestedFormat reads only `$format`, for answering errors in the right format even when other options are bad. */
export function requestedFormat(raw: Record<string, unknown>): ODataFormat | undefined {
  const value = raw.$format;
  if (typeof value !== 'string') return undefined;
  try {
    return parseFormat(value);
  } catch {
    return undefined;
  }
}

/**
 * checkQueryEncoding refuses a query string (the part after `?`, still encoded) with broken
 * percent-encoding or bytes that are not UTF-8, naming the option: the query parser would otherwise
 * keep such a value undecoded and the error would point at a '%' the client never meant.
 */
export function checkQueryEncoding(search: string): void {
  for (const part of search.split('&')) {
    if (!part.includes('%')) continue;
    try {
      decodeURIComponent(part);
    } catch {
      const name = part.split('=', 1)[0]!;
      let shown = name;
      try {
        shown = decodeURIComponent(name);
      } catch {
        // The name itself is broken: show it as sent.
      }
      throw new ODataRequestError(`The option ${shown.slice(0, 40)} is not valid percent-encoded UTF-8; write each byte of its UTF-8 form as %XX.`);
    }
  }
}

/** parseQueryOptions checks every option of `raw` (a parsed query string) and parses the expressions. */
export function parseQueryOptions(raw: Record<string, unknown>): ODataQuery {
  for (const name of Object.keys(raw)) {
    if (name.startsWith('$') && !KNOWN.has(name)) {
      throw new ODataRequestError(`The query option ${name.slice(0, 40)} is not supported; the supported ones are ${[...KNOWN].join(', ')}.`);
    }
  }
  const query: ODataQuery = { select: [...PROPERTY_NAMES], inlineCount: false, all: false };
  const filter = single(raw, '$filter');
  if (filter !== undefined) query.filter = parseFilter(filter);
  const orderBy = single(raw, '$orderby');
  if (orderBy !== undefined) query.orderBy = parseOrderBy(orderBy);
  const select = single(raw, '$select');
  if (select !== undefined) query.select = parseSelect(select);
  const top = single(raw, '$top');
  if (top !== undefined) query.top = count('$top', top);
  const skip = single(raw, '$skip');
  if (skip !== undefined) query.skip = count('$skip', skip);
  const skipToken = single(raw, '$skiptoken');
  if (skipToken !== undefined) query.skipToken = decodeSkipToken(skipToken);
  const inlineCount = single(raw, '$inlinecount');
  if (inlineCount !== undefined) {
    if (inlineCount !== 'allpages' && inlineCount !== 'none') {
      throw new ODataRequestError(`The option $inlinecount must be allpages or none; got "${inlineCount.slice(0, 40)}".`);
    }
    query.inlineCount = inlineCount === 'allpages';
  }
  const format = single(raw, '$format');
  if (format !== undefined) query.format = parseFormat(format);
  const expand = single(raw, '$expand');
  if (expand !== undefined && expand.trim() !== '') {
    throw new ODataRequestError('The option $expand is not supported: the entity type Nonsense has no navigation properties.');
  }
  const all = single(raw, 'all');
  if (all !== undefined) {
    if (all !== 'true' && all !== 'false') throw new ODataRequestError(`The option all must be true or false; got "${all.slice(0, 40)}".`);
    query.all = all === 'true';
  }
  return query;
}
