/** Choosing between Atom and JSON: `$format` when given, else the Accept header, else Atom. */
import { requestedFormat, type ODataFormat } from '../../domain/odata/query-options.ts';

const XML_TYPES = new Set(['application/atom+xml', 'application/xml', 'text/xml', 'application/atomsvc+xml']);

/**
 * acceptedFormat reads an Accept header: JSON when `application/json` is preferred (higher quality)
 * over every XML type it lists; Atom otherwise, including for a missing header or `*\/*`, since Atom is
 * the format OData v2 consumers without a preference expect.
 */
export function acceptedFormat(accept: string | undefined): ODataFormat {
  if (!accept) return 'atom';
  let json = 0;
  let xml = 0;
  for (const range of accept.split(',')) {
    const [type = '', ...parameters] = range.split(';').map((part) => part.trim().toLowerCase());
    const qParameter = parameters.find((p) => p.startsWith('q='));
    const q = qParameter === undefined ? 1 : Number(qParameter.slice(2));
    if (!Number.isFinite(q)) continue;
    if (type === 'application/json') json = Math.max(json, q);
    else if (XML_TYPES.has(type)) xml = Math.max(xml, q);
  }
  return json > xml ? 'json' : 'atom';
}

/** What of a request the choice reads (a Fastify request is one). */
export interface NegotiatingRequest {
  url: string;
  query: unknown;
  headers: { accept?: string };
}

/**
 * responseFormatOf picks the response format of a request; a bad `$format` counts as absent here. A request
 * the router refused (broken percent-encoding) has no parsed query, so `$format` is then read from
 * the raw URL, leniently.
 */
export function responseFormatOf(request: NegotiatingRequest, explicit?: ODataFormat): ODataFormat {
  if (explicit) return explicit;
  let query = request.query as Record<string, unknown> | undefined;
  if (query === null || typeof query !== 'object') {
    const at = request.url.indexOf('?');
    query = at === -1 ? {} : { $format: new URLSearchParams(request.url.slice(at + 1)).get('$format') ?? undefined };
  }
  return requestedFormat(query) ?? acceptedFormat(request.headers.accept);
}
