/**
 * A typed client of the API, made as a client author makes one: openapi-fetch over the types that
 * openapi-typescript generated from /openapi.json (schema.ts). Its requests go to a test app through
 * `inject`, so they are checked against the document like every other answer of the suite.
 */
import type { FastifyInstance } from 'fastify';
import createClient, { type Client } from 'openapi-fetch';
import type { paths } from './schema.ts';

/** JSON bodies: the client reads other media types (CSV, PNG, XML) with `parseAs`. */
type Json = `${string}/${string}json`;
export type ApiClient = Client<paths, Json>;

const BASE = 'http://nonsense.test';

/** injectFetch answers a fetch Request with the app's answer to the same request. */
async function injectFetch(app: FastifyInstance, request: Request): Promise<Response> {
  const url = new URL(request.url);
  const payload = request.body === null ? undefined : Buffer.from(await request.arrayBuffer());
  const answer = await app.inject({
    method: request.method as 'GET',
    url: url.pathname + url.search,
    headers: Object.fromEntries(request.headers),
    ...(payload === undefined ? {} : { payload }),
  });
  const headers = new Headers();
  for (const [name, value] of Object.entries(answer.headers)) {
    for (const one of ([] as (string | number | undefined)[]).concat(value)) if (one !== undefined) headers.append(name, String(one));
  }
  const empty = request.method === 'HEAD' || answer.statusCode === 204 || answer.statusCode === 304;
  return new Response(empty ? null : answer.rawPayload, { status: answer.statusCode, headers });
}

/** apiClient is a typed client of `app`, optionally with an admin token. */
export function apiClient(app: FastifyInstance, token?: string): ApiClient {
  return createClient<paths, Json>({
    baseUrl: BASE,
    fetch: (request) => injectFetch(app, request),
    ...(token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } }),
  });
}
