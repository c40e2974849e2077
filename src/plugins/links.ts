/** Absolute links: from BASE_URL when it is set, else from the request's scheme and host. */
import type { FastifyRequest } from 'fastify';

const SAFE_HOST = /^[a-z0-9.-]+(:\d{1,5})?$|^\[[0-9a-f:.]+\](:\d{1,5})?$/i;

/** baseUrlOf returns the service's base URL without a trailing slash. */
export function baseUrlOf(request: FastifyRequest): string {
  const configured = request.server.config.baseUrl;
  if (configured !== null) return configured;
  const host = request.host;
  // A Host header is client input: only a plain host[:port] may end up in links.
  const safeHost = SAFE_HOST.test(host) ? host : `${request.server.config.host}:${request.server.config.port}`;
  return `${request.protocol}://${safeHost}`;
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
