/** Conditional GET: ETags, `If-None-Match` and 304s, for every cacheable response. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import fresh from 'fresh';

/**
 * notModified sets `ETag` and `Cache-Control` and tells whether the client's copy is current; when it
 * is, a 304 has been sent and the handler must only `return reply`.
 */
export function notModified(request: FastifyRequest, reply: FastifyReply, etag: string, cacheControl: string): boolean {
  reply.header('etag', etag).header('cache-control', cacheControl);
  if (request.headers['if-none-match'] !== undefined && fresh(request.headers, { etag })) {
    reply.code(304).send();
    return true;
  }
  return false;
}

/** revisionTag is the weak ETag of a response derived only from the database revision. */
export function revisionTag(revision: number, variant = ''): string {
  return `W/"r${revision}${variant ? `-${variant}` : ''}"`;
}
