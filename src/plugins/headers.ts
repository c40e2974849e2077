/**
 * The headers every response carries, set by one hook from one precomputed list: the request id,
 * CORS for any origin (every public endpoint is cross-origin), and the security
 * headers that still matter. This replaces @fastify/cors and @fastify/helmet, whose per-request work
 * (option checks, a middleware call, one `setHeader` with validation per header) cost about as much
 * as the rest of a fast request. Preflights are answered as before: any OPTIONS gets 204 with the
 * allowed methods, the requested headers and a max age, never a text/plain 400.
 *
 * Pages set their own Content-Security-Policy (the site, /docs), so none is set here. The API is
 * public and cross-origin (images and emojis embedded by other sites), hence cross-origin CORP. HSTS
 * belongs to whoever terminates TLS, and its includeSubDomains would reach beyond this service.
 * Headers for browsers long gone (IE's download options and XSS auditor, Flash policies, DNS
 * prefetch, Origin-Agent-Cluster) are left out.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import fp from 'fastify-plugin';

/** Methods a cross-origin caller may use. */
export const CORS_METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE';

/**
 * Response headers a cross-origin script may read: all of them (ETag, X-Request-Id, Retry-After,
 * Content-Disposition, DataServiceVersion, the RateLimit headers, and any added later). The wildcard
 * means exactly that for a request without credentials, and no cross-origin request here can carry
 * credentials, as `Access-Control-Allow-Origin` is `*`. It is 130 bytes shorter than the list on
 * every answer, for the service to write and check and for every client to read.
 */
export const CORS_EXPOSED_HEADERS = '*';

/** How long a browser may cache a preflight answer, in seconds. */
const PREFLIGHT_MAX_AGE_S = '86400';

/** The constant headers of every response, lower-case, as Fastify keeps them. */
const CONSTANT_HEADERS: readonly (readonly [string, string])[] = [
  ['cross-origin-opener-policy', 'same-origin'],
  ['cross-origin-resource-policy', 'cross-origin'],
  ['referrer-policy', 'no-referrer'],
  ['x-content-type-options', 'nosniff'],
  ['x-frame-options', 'SAMEORIGIN'],
  ['access-control-allow-origin', '*'],
  ['access-control-expose-headers', CORS_EXPOSED_HEADERS],
];

/** The same headers as one flat list of names and values, as `writeHead` takes them. */
export const COMMON_HEADERS: readonly string[] = CONSTANT_HEADERS.flat();

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/**
 * New request ids: UUID-shaped, a random part drawn once per process and a counter, so they are
 * unique across processes and restarts without drawing random bytes (and a string of them) for every
 * request, which cost a few per cent of a fast request. They tell a client how many requests this
 * process has answered since it started, and nothing else.
 */
const idPrefix = randomUUID().slice(0, 23);
let idCounter = 0;

/**
 * givenRequestId is the caller's X-Request-Id, read from the raw header list: Node builds a request's
 * `headers` object on first use, which the fast lane otherwise never needs. A header sent twice
 * counts as none, as its joined value (`a, b`) would not pass the check either.
 */
function givenRequestId(rawHeaders: readonly string[]): string | undefined {
  let given: string | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length === 12 && name.toLowerCase() === 'x-request-id') {
      if (given !== undefined) return undefined;
      given = rawHeaders[i + 1]!;
    }
  }
  return given;
}

/** requestId is the request's id: the caller's X-Request-Id when it is sane (a proxy's), else a new one. */
export function requestId(request: { rawHeaders: readonly string[] }): string {
  const given = givenRequestId(request.rawHeaders);
  if (given !== undefined && REQUEST_ID.test(given)) return given;
  idCounter = (idCounter + 1) % 0x1000000000000;
  return `${idPrefix}-${idCounter.toString(16).padStart(12, '0')}`;
}

/** setCommonHeaders sets the headers of every response: the request id and the constant ones. */
export function setCommonHeaders(reply: FastifyReply, requestId: string): void {
  reply.header('x-request-id', requestId);
  for (let i = 0; i < CONSTANT_HEADERS.length; i++) {
    const header = CONSTANT_HEADERS[i]!;
    reply.header(header[0], header[1]);
  }
}

export default fp(
  async function headersPlugin(app: FastifyInstance) {
    // A callback hook: cheaper than an async one on the hot path.
    app.addHook(
      'onRequest',
      app.fastLane.mirrors('commonHeaders', (request, reply, done) => {
        setCommonHeaders(reply, request.id);
        done();
      }),
    );

    // Every OPTIONS request: a preflight (Origin and Access-Control-Request-Method) or not, it gets
    // what a preflight needs. Answered before any route's own hooks (admin authentication), as a
    // browser sends no credentials with a preflight.
    app.options('*', { schema: { hide: true } }, (request, reply) => {
      reply.header('access-control-allow-methods', CORS_METHODS).header('vary', 'Access-Control-Request-Headers');
      const requested = request.headers['access-control-request-headers'];
      if (typeof requested === 'string' && requested !== '') reply.header('access-control-allow-headers', requested);
      reply.header('access-control-max-age', PREFLIGHT_MAX_AGE_S).header('content-length', '0').code(204).send();
    });
  },
  { name: 'headers' },
);
