/**
 * Conditional requests (RFC 9110 §13): validators (`ETag`, and `Last-Modified` where the answer has a
 * true modification time), `If-None-Match` and `If-Modified-Since`, and 304s, for every response that
 * has a validator. The fast lane answers with the same comparison (etagMatches).
 *
 * The request's own cache directives (`Cache-Control: no-cache`, `Pragma: no-cache`) do not change the
 * answer. They tell caches on the way not to answer from a stored copy, and this is the origin server,
 * which evaluates the condition as it stands (RFC 9110 §13.1.2, §13.2.1). fetch() sends both with every
 * request whose script sets `If-None-Match` itself: a page or a script revalidating by hand gets its 304.
 */
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';

const SPACE = 0x20;
const TAB = 0x09;
const COMMA = 0x2c;
const QUOTE = 0x22;
const STAR = 0x2a;
const W = 0x57;
const SLASH = 0x2f;

/**
 * etagMatches tells whether an `If-None-Match` field value names `etag` by the weak comparison
 * (RFC 9110 §8.8.3.2: the opaque tags are equal, whether either is marked weak): a list of entity
 * tags, as sent or joined from several field lines, or `*`, which any current representation matches.
 * A member that is no entity tag (unquoted, unterminated) matches nothing. No allocation: the fast lane
 * runs it on every conditional request.
 */
export function etagMatches(field: string, etag: string): boolean {
  // The response's opaque tag, quotes included, past a weakness prefix.
  const from = etag.charCodeAt(0) === W ? 2 : 0;
  const length = etag.length - from;
  const end = field.length;
  let i = 0;
  while (i < end) {
    const c = field.charCodeAt(i);
    if (c === SPACE || c === TAB || c === COMMA) {
      i++;
      continue;
    }
    if (c === STAR) return true;
    const open = c === W && field.charCodeAt(i + 1) === SLASH ? i + 2 : i;
    if (field.charCodeAt(open) !== QUOTE) {
      // Not an entity tag: skip the member (a tag may hold commas, but this is no tag).
      const next = field.indexOf(',', open);
      if (next === -1) return false;
      i = next + 1;
      continue;
    }
    const close = field.indexOf('"', open + 1);
    if (close === -1) return false;
    if (close + 1 - open === length && sameText(field, open, etag, from, length)) return true;
    i = close + 1;
  }
  return false;
}

function sameText(a: string, at: number, b: string, bt: number, length: number): boolean {
  for (let k = 0; k < length; k++) if (a.charCodeAt(at + k) !== b.charCodeAt(bt + k)) return false;
  return true;
}

/**
 * modifiedSince tells whether a resource last modified at `lastModified` (Unix ms) is newer than an
 * `If-Modified-Since` field value. A value that is no date counts as no condition (RFC 9110 §13.1.3):
 * the answer is the full one. HTTP dates have whole seconds, so a change within the second of the
 * client's date counts as not newer; the ETag, which takes precedence, tells such changes apart.
 */
export function modifiedSince(field: string, lastModified: number): boolean {
  // IMF-fixdate and RFC 850 dates name GMT; an asctime date is GMT without saying so.
  const since = Date.parse(field.endsWith('GMT') ? field : `${field} GMT`);
  if (Number.isNaN(since)) return true;
  return Math.floor(lastModified / 1000) * 1000 > since;
}

/** isNotModified evaluates a GET or HEAD's conditions: If-None-Match when sent, else If-Modified-Since where the answer has a time. */
export function isNotModified(
  ifNoneMatch: string | undefined,
  ifModifiedSince: string | undefined,
  etag: string,
  lastModified: number | undefined,
): boolean {
  if (ifNoneMatch !== undefined) return etagMatches(ifNoneMatch, etag);
  if (ifModifiedSince === undefined || lastModified === undefined) return false;
  return !modifiedSince(ifModifiedSince, lastModified);
}

/**
 * notModified sets the answer's validators (`ETag`, with `lastModified` in Unix ms also
 * `Last-Modified`) and `Cache-Control`, and tells whether the client's copy is current; when it is, a
 * 304 with those headers has been sent and the handler must only `return reply`.
 */
export function notModified(request: FastifyRequest, reply: FastifyReply, etag: string, cacheControl: string, lastModified?: number): boolean {
  reply.header('etag', etag).header('cache-control', cacheControl);
  // Never later than now (RFC 9110 §8.8.2.1), should the clock of the process that wrote it run ahead.
  const modified = lastModified === undefined ? undefined : Math.min(lastModified, Date.now());
  if (modified !== undefined) reply.header('last-modified', new Date(modified).toUTCString());
  const { 'if-none-match': ifNoneMatch, 'if-modified-since': ifModifiedSince } = request.headers;
  if (ifNoneMatch === undefined && ifModifiedSince === undefined) return false;
  if (!isNotModified(ifNoneMatch, ifModifiedSince, etag, modified)) return false;
  reply.code(304).send();
  return true;
}

/**
 * revisionTag is the weak ETag of a response derived from the database revision and, in `variant`,
 * everything else the answer depends on (query, format, host).
 */
export function revisionTag(revision: number, variant = ''): string {
  return `W/"r${revision}${variant ? `-${variant}` : ''}"`;
}

/** strongTag is the strong ETag of exact bytes named by `id` (a hash or key of them). */
export function strongTag(id: string): string {
  return `"${id}"`;
}

/** contentTag is the strong ETag of a body made in memory: the start of its SHA-256. */
export function contentTag(body: string | Buffer): string {
  return strongTag(createHash('sha256').update(body).digest('hex').slice(0, 32));
}

/**
 * weakContentTag is the weak ETag of an answer's content given as `parts` (what it says, not its
 * bytes: the body is serialised after the tag is made).
 */
export function weakContentTag(...parts: string[]): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part).update('\0');
  return `W/"c${hash.digest('hex').slice(0, 32)}"`;
}
