/**
 * HEAD is GET without the body (RFC 9110 §9.3.2). Every GET route answers HEAD by running the same
 * handler, so the status and headers are the GET's (an error is the same error); only the body is
 * left out, here, in one place, so no handler needs to know the method.
 *
 * Fastify adds a HEAD route beside every GET route, whose last onSend hook drops the body. This
 * plugin puts its own hook in that place, which differs from Fastify's in two ways:
 *
 * - A streamed answer (an export, an OData feed, a galaxy too large to keep) is closed unread, where
 *   Fastify's reads it to its end: every page of the database for nothing. Like its GET, which is sent
 *   chunked, it has no Content-Length; a download manager sees "unknown", not an empty file.
 * - An answer that has no content (304, 204) gets no Content-Length, where Fastify's sets 0: a 304's
 *   Content-Length would state the length of the representation, which is not 0 (RFC 9110 §8.6).
 *
 * A body in memory gets the Content-Length its GET sends, the byte length of the same body.
 */
import type { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest, onSendHookHandler } from 'fastify';
import fp from 'fastify-plugin';

/** The name of Fastify's own onSend hook of the HEAD routes it adds (fastify/lib/head-route.js). */
const FASTIFY_HEAD_HOOK = 'headRouteOnSendHandler';

const ignore = () => {};

function headOnSend(_request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (error: Error | null, payload: null) => void): void {
  if (payload === undefined || payload === null) {
    // As Fastify sends a GET without a body: a length of 0, unless the status has no content.
    const status = reply.statusCode;
    if (status >= 200 && status !== 204 && status !== 304) reply.header('content-length', '0');
  } else if (typeof (payload as Readable).pipe === 'function') {
    // Nobody reads it, and an error while it closes concerns nobody.
    (payload as Readable).on('error', ignore).destroy();
  } else if (typeof (payload as ReadableStream).getReader === 'function') {
    (payload as ReadableStream).cancel().catch(ignore);
  } else {
    reply.header('content-length', String(Buffer.byteLength(payload as string | Buffer)));
  }
  done(null, null);
}

export default fp(
  async function headPlugin(app: FastifyInstance) {
    app.addHook('onRoute', (route) => {
      if (route.method !== 'HEAD' || route.onSend === undefined) return;
      const hooks = ([] as onSendHookHandler[]).concat(route.onSend as onSendHookHandler | onSendHookHandler[]);
      // Only the HEAD routes Fastify adds end with its hook; a HEAD route declared on its own keeps its hooks.
      if (hooks.at(-1)?.name !== FASTIFY_HEAD_HOOK) return;
      hooks[hooks.length - 1] = headOnSend as onSendHookHandler;
      route.onSend = hooks;
    });
  },
  { name: 'head' },
);
