/**
 * The query options of an OData v2 request, parsed and checked in one place: system options
 * (`$filter`, `$orderby`, `$select`, `$top`, `$skip`, `$skiptoken`, `$inlinecount`, `$format`,
 * `$expand`), and the service's own `all`. Unknown `$` options are refused (OData reserves them, and a
 * silently ignored `$search` would answer a different question); other custom options are ignored.
 */
import { ODataRequestError } from './errors.ts';
import { parseFilter, parseOrderBy, type ExpressionNode, type OrderByItem } from './expression.ts';
import { PROPERTY_NAMES, propertyNamed, type PropertyName } from './model.ts';

export type ODataFormat = 'atom' | 'json';

export interface SkipToken {
  timestamp: number;
  uuid: string;
}

export interface ODataQuery {
  filter?: ExpressionNode;
  orderBy?: OrderByItem[];
  /** The properties to return, in model order; all when `$select` is absent or `*`. */
  select: PropertyName[];
  top?: number;
  skip?: number;
  skipToken?: SkipToken;
  inlineCount: boolean;
  /** Only when `$format` was given; otherwise the Accept header decides. */
  format?: ODataFormat;
  /** `all=true`: the whole result in one response instead of pages. */
  all: boolean;
}

const KNOWN = new Set(['$filter', '$orderby', '$select', '$top', '$skip', '$skiptoken', '$inlinecount', '$format', '$expand']);

/** The largest $top/$skip taken; past it the number means nothing for a table of this size. */
const MAX_COUNT = 2 ** 31 - 1;

const SKIP_TOKEN = /^(\d{1,15})_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

/** encodeSkipToken writes the position after which the next page starts: `<timestamp>_<uuid>`. */
export function encodeSkipToken(token: SkipToken): string {
  return `${token.timestamp}_${token.uuid}`;
}

function decodeSkipToken(text: string): SkipToken {
  const match = SKIP_TOKEN.exec(text);
  if (!match) throw new ODataRequestError(`The $skiptoken "${text.slice(0, 80)}" is not one this service gave out; follow the next link of a previous page.`);
  return { timestamp: Number(match[1]), uuid: match[2]! };
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
