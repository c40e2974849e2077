/**
 * Absolute links: from BASE_URL when it is set, else from the request's scheme and host. An answer
 * whose links follow the request differs from host to host, so it says so (`Vary: Host`, and the
 * proxy's headers where TRUST_PROXY lets them count): a shared cache then keeps one copy per host
 * instead of serving the links a client chose in its Host header to everyone. `absoluteBase` is the
 * way to the base URL for an answer, and records that dependency on the reply itself.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';

const SAFE_HOST = /^[a-z0-9.-]+(:\d{1,5})?$|^\[[0-9a-f:.]+\](:\d{1,5})?$/i;

/** The request headers a link built from the request depends on, without and with a trusted proxy. */
const FROM_REQUEST = ['Host'] as const;
const FROM_PROXIED_REQUEST = ['Host', 'X-Forwarded-Host', 'X-Forwarded-Proto'] as const;

/**
 * baseUrlOf returns the service's base URL without a trailing slash. An answer that carries it
 * should get it from `absoluteBase`, which also marks the answer as depending on the host.
 */
export function baseUrlOf(request: FastifyRequest): string {
  const { baseUrl, host, port } = request.server.config;
  if (baseUrl !== null) return baseUrl;
  // A Host header (or a trusted proxy's X-Forwarded-Host/Proto) is client input: only a plain
  // host[:port] and http or https may end up in links.
  const safeHost = SAFE_HOST.test(request.host) ? request.host : `${host}:${port}`;
  const protocol = request.protocol === 'https' ? 'https' : 'http';
  return `${protocol}://${safeHost}`;
}

/** absoluteBase is baseUrlOf for an answer that carries links: with BASE_URL unset, the answer varies by host. */
export function absoluteBase(request: FastifyRequest, reply: FastifyReply): string {
  if (request.server.config.baseUrl === null) varyOnHost(reply);
  return baseUrlOf(request);
}

/** varyOnHost adds the request headers that links built from the request depend on to the answer's Vary. */
export function varyOnHost(reply: FastifyReply): void {
  addVary(reply, reply.server.config.trustProxy === false ? FROM_REQUEST : FROM_PROXIED_REQUEST);
}

/** addVary adds `names` to the answer's Vary, keeping what is there (once each, any case; `*` stays alone). */
export function addVary(reply: FastifyReply, names: readonly string[]): void {
  const current = reply.getHeader('vary');
  const present = current === undefined ? [] : String(current).split(',').map((name) => name.trim()).filter((name) => name !== '');
  if (present.includes('*')) return;
  const known = new Set(present.map((name) => name.toLowerCase()));
  const added = names.filter((name) => !known.has(name.toLowerCase()));
  if (added.length > 0) reply.header('vary', [...present, ...added].join(', '));
}

/**
 * nextPageLink is the `Link` header announcing the next page of a list (RFC 8288): the URL of this
 * request, absolute, with `cursor` set to where the next page starts.
 */
export function nextPageLink(request: FastifyRequest, cursor: string): string {
  // Joined as text: a request URL beginning with `//` must stay a path, not become a host.
  const url = new URL(baseUrlOf(request) + request.url);
  url.searchParams.set('cursor', cursor);
  return `<${url.href}>; rel="next"`;
}
