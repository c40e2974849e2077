/**
 * The response headers clients rely on, described once: plugins/docs.ts puts them in
 * `components.headers` and refers to them from every response that carries them. A route may name
 * the ones only it sends (`Link`) in its response schema's `headers`, by these names (docs.ts names
 * the export's `Content-Disposition`); the ones set across routes (the request id, caching, rate limits, `Allow`, `Retry-After`,
 * `WWW-Authenticate`, OData's version) are added by docs.ts by rule.
 */
interface HeaderObject {
  description: string;
  required?: boolean;
  schema: object;
}

const header = (description: string, schema: object, required = false): HeaderObject => ({ description, ...(required ? { required } : {}), schema });

const seconds = (description: string) => ({ type: 'integer', minimum: 0, description, examples: [30] });

export const RESPONSE_HEADERS = {
  'X-Request-Id': header(
    "The request's id: the caller's own `X-Request-Id` when it is sane (1 to 128 of letters, digits, `_ . : -`), else a new one. Server errors name it.",
    { type: 'string', pattern: '^[\\w.:-]{1,128}$' },
    true,
  ),
  'Cache-Control': header(
    'How long the answer may be kept: `no-store` (random entry, writes, errors the service marks so), `no-cache` (revalidate with `If-None-Match`), or `public, max-age=<s>` (share images, emoji images).',
    { type: 'string', minLength: 1 },
  ),
  ETag: header('The version of the answer, strong or weak (`W/"…"`); send it back in `If-None-Match` to get a 304 while it is current.', { type: 'string', pattern: '^(W/)?"[^"]*"$' }),
  'Retry-After': header('Seconds to wait before trying again.', seconds('Seconds.')),
  'RateLimit-Limit': header("Requests this operation's budget allows an address per window (IETF draft RateLimit header fields), while the limit is on.", seconds('Requests.')),
  'RateLimit-Remaining': header('Requests left to the address in the current window.', seconds('Requests.')),
  'RateLimit-Reset': header('Seconds until the window ends and the budget is full again.', seconds('Seconds.')),
  'WWW-Authenticate': header('`Bearer realm="nonsense-admin"`, with `error="invalid_token"` when a token was sent but is not valid.', { type: 'string', pattern: '^Bearer ' }, true),
  Allow: header('The methods the path has (OPTIONS, answered for CORS everywhere, is not listed).', { type: 'string', pattern: '^[A-Z]+(, [A-Z]+)*$' }, true),
  'Content-Disposition': header('`attachment; filename="nonsense.<format>"`: browsers save the export as a file.', { type: 'string', pattern: '^attachment; filename="nonsense\\.(csv|json|txt)"$' }, true),
  Link: header('While more remain: `<URL of the next page>; rel="next"` (RFC 8288). The body stays a plain array.', { type: 'string', pattern: '^<[^>]+>; rel="next"$' }),
  DataServiceVersion: header('The OData protocol version of the answer: always `2.0`.', { type: 'string', const: '2.0' }),
  'Access-Control-Allow-Methods': header('The methods a cross-origin caller may use.', { type: 'string', pattern: '^[A-Z]+(, [A-Z]+)*$' }, true),
  'Access-Control-Allow-Headers': header('The request headers the preflight asked for (`Access-Control-Request-Headers`), all allowed.', { type: 'string' }),
  'Access-Control-Max-Age': header('How long a browser may keep the preflight answer, in seconds.', seconds('Seconds.'), true),
} satisfies Record<string, HeaderObject>;

export type ResponseHeaderName = keyof typeof RESPONSE_HEADERS;

/** headersOf names headers a route's response carries, for its response schema's `headers`. */
export function headersOf(...names: ResponseHeaderName[]): Record<string, object> {
  return Object.fromEntries(names.map((name) => [name, RESPONSE_HEADERS[name].schema]));
}
