/**
 * The OData v2 interface (experimental), registered under `/odata/v2`: the service document,
 * `$metadata`, the `nonsense_list` feed (Atom or verbose JSON) with query options and server-driven
 * paging, `$count`, and single entities. Every response, errors and 304s included, carries
 * `DataServiceVersion: 2.0`; every error is in the OData error format. See docs/odata.md.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { compileFilter, compileOrderBy, type CompileContext } from '../../domain/odata/compile.ts';
import { ODataRequestError } from '../../domain/odata/errors.ts';
import { ENTITY_SET } from '../../domain/odata/model.ts';
import { encodeSkipToken, parseQueryOptions, type ODataFormat, type ODataQuery } from '../../domain/odata/query-options.ts';
import { parseResourcePath } from '../../domain/odata/resource-path.ts';
import { CLIENT_VARIABLES, type ServerVariables } from '../../domain/variables.ts';
import { ATOM_ENTRY_CONTENT_TYPE, ATOM_FEED_CONTENT_TYPE, atomEntry, atomFeed } from '../../formats/odata/atom.ts';
import { toODataEntity } from '../../formats/odata/entity.ts';
import { JSON_ERROR_CONTENT_TYPE, jsonError, XML_ERROR_CONTENT_TYPE, xmlError } from '../../formats/odata/errors.ts';
import { JSON_CONTENT_TYPE, jsonEntry, jsonFeed } from '../../formats/odata/json.ts';
import { METADATA_CONTENT_TYPE, metadataDocument, SERVICE_CONTENT_TYPE, jsonServiceDocument, serviceDocument } from '../../formats/odata/metadata.ts';
import { notModified } from '../../plugins/http-cache.ts';
import { HttpProblem } from '../../plugins/problem.ts';
import { isKeysetOrder, type EntryListQuery } from '../../storage/entry-query.ts';
import type { EntryRecord } from '../../storage/entries.ts';
import { baseUrlOf } from '../links.ts';
import { formatOf } from './negotiate.ts';

/** Entries per page of the feed without `all=true`, as the contract says; the plugin option overrides it. */
export const ODATA_PAGE_SIZE = 100;

export interface ODataOptions {
  /** Entries per page of server-driven paging (default ODATA_PAGE_SIZE). */
  pageSize?: number;
}

const METADATA = metadataDocument();

const odataRoutes: FastifyPluginAsync<ODataOptions> = async (app, options) => {
  const pageSize = options.pageSize ?? ODATA_PAGE_SIZE;
  const { entries, entryQuery, variables, cache } = app.storage;
  const prefix = app.prefix;

  app.addHook('onRequest', (_request, reply, done) => {
    reply.header('dataserviceversion', '2.0');
    done();
  });

  /** sendError answers in the OData error format, JSON when the request asked for JSON. */
  function sendError(request: FastifyRequest, reply: FastifyReply, status: number, message: string, format?: ODataFormat) {
    const json = formatOf(request, format) === 'json';
    // Set here too: a refusal by an app-wide hook (overload, rate limit) comes before this plugin's hook.
    return reply
      .code(status)
      .header('dataserviceversion', '2.0')
      .header('cache-control', 'no-store')
      .type(json ? JSON_ERROR_CONTENT_TYPE : XML_ERROR_CONTENT_TYPE)
      .send(json ? jsonError(message) : xmlError(message));
  }

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof ODataRequestError) return sendError(request, reply, error.status, error.message);
    if (error instanceof HttpProblem) {
      reply.headers(error.headers);
      return sendError(request, reply, error.status, error.detail);
    }
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) return sendError(request, reply, status, error.message || 'The request was not accepted.');
    request.log.error({ reqId: request.id, method: request.method, url: request.url, err: error }, 'request failed');
    return sendError(request, reply, 500, `The server could not complete the request. If this persists, report it with request id ${request.id}.`);
  });

  // Only GET and HEAD have routes here (OPTIONS is CORS); anything else reaches this handler.
  app.setNotFoundHandler((request, reply) => {
    reply.header('allow', 'GET, HEAD, OPTIONS');
    return sendError(request, reply, 405, `${request.method} is not allowed: this OData interface is read-only; use GET.`);
  });

  /** The absolute service root, e.g. `https://example.org/odata/v2/`. */
  const serviceRootOf = (request: FastifyRequest) => `${baseUrlOf(request)}${prefix}/`;

  /** A weak ETag from the revision and everything the response depends on. */
  async function revalidate(request: FastifyRequest, reply: FastifyReply, format: ODataFormat): Promise<boolean> {
    const tag = createHash('sha256').update(JSON.stringify([format, serviceRootOf(request), request.url])).digest('base64url').slice(0, 16);
    return notModified(request, reply, `W/"r${await cache.current()}-${tag}"`, 'no-cache');
  }

  function compileContext(serverVariables: ServerVariables): CompileContext {
    return {
      quirks: app.storage.database.quirks,
      variableTokens: [...serverVariables.keys(), ...CLIENT_VARIABLES.map((v) => v.name)],
    };
  }

  async function handle(request: FastifyRequest, reply: FastifyReply) {
    const url = request.url;
    const queryAt = url.indexOf('?');
    const path = (queryAt === -1 ? url : url.slice(0, queryAt)).slice(prefix.length);
    const resource = parseResourcePath(path);
    const query = parseQueryOptions(request.query as Record<string, unknown>);
    const format = formatOf(request, query.format);
    const serviceRoot = serviceRootOf(request);

    switch (resource.kind) {
      case 'service':
        if (await revalidate(request, reply, format)) return reply;
        return format === 'json'
          ? reply.type(JSON_CONTENT_TYPE).send(jsonServiceDocument())
          : reply.type(SERVICE_CONTENT_TYPE).send(serviceDocument(serviceRoot));
      case 'metadata':
        // EDMX is XML only in OData v2, whatever was asked for.
        if (await revalidate(request, reply, 'atom')) return reply;
        return reply.type(METADATA_CONTENT_TYPE).send(METADATA);
      case 'entity': {
        const entry = await entries.findVisible(resource.uuid);
        if (entry === null) throw new ODataRequestError(`There is no entity ${ENTITY_SET}(guid'${resource.uuid}').`, 404);
        if (await revalidate(request, reply, format)) return reply;
        const entity = toODataEntity(entry, await variables.values());
        return format === 'json'
          ? reply.type(JSON_CONTENT_TYPE).send(jsonEntry(entity, { serviceRoot, select: query.select }))
          : reply.type(ATOM_ENTRY_CONTENT_TYPE).send(atomEntry(entity, { serviceRoot, select: query.select, updated: new Date().toISOString() }));
      }
      case 'count': {
        const serverVariables = await variables.values();
        const listQuery = listQueryOf(query, compileContext(serverVariables));
        if (await revalidate(request, reply, format)) return reply;
        // $count counts what the same URL without /$count would return across all its pages.
        const total = await entryQuery.count(listQuery.where);
        const counted = Math.max(0, Math.min(query.top ?? Number.POSITIVE_INFINITY, total - (query.skip ?? 0)));
        return reply.type('text/plain;charset=utf-8').send(String(counted));
      }
      case 'collection':
        return collection(request, reply, query, format, serviceRoot);
    }
  }

  function listQueryOf(query: ODataQuery, context: CompileContext): EntryListQuery {
    const listQuery: EntryListQuery = {};
    if (query.filter) listQuery.where = compileFilter(query.filter, context);
    if (query.orderBy) listQuery.order = compileOrderBy(query.orderBy, context);
    if (query.skipToken) {
      if (!isKeysetOrder(listQuery.order)) {
        throw new ODataRequestError('$skiptoken only continues an order by timestamp, created or uuid; follow the next link as given.');
      }
      listQuery.after = query.skipToken;
    }
    if (query.skip) listQuery.offset = query.skip;
    return listQuery;
  }

  async function collection(request: FastifyRequest, reply: FastifyReply, query: ODataQuery, format: ODataFormat, serviceRoot: string) {
    const serverVariables = await variables.values();
    const listQuery = listQueryOf(query, compileContext(serverVariables));
    if (await revalidate(request, reply, format)) return reply;
    reply.type(format === 'json' ? JSON_CONTENT_TYPE : ATOM_FEED_CONTENT_TYPE);
    if (request.method === 'HEAD') return reply.send('');

    const count = query.inlineCount ? await entryQuery.count(listQuery.where) : undefined;
    const toEntities = async function* (pages: AsyncIterable<EntryRecord[]>) {
      for await (const page of pages) yield page.map((entry) => toODataEntity(entry, serverVariables));
    };

    let pages: AsyncIterable<EntryRecord[]>;
    let next: string | undefined;
    if (query.all) {
      const walk = entryQuery.listPages(query.top === undefined ? listQuery : { ...listQuery, limit: query.top });
      // Reading the first page before the headers go out turns a failing query into an error response.
      pages = await primed(walk);
    } else {
      // Reading one more than a page tells whether a next page exists, without counting.
      const limit = Math.min(pageSize, query.top ?? pageSize);
      const mayContinue = query.top === undefined || query.top > limit;
      const rows = await entryQuery.list({ ...listQuery, limit: mayContinue ? limit + 1 : limit });
      const page = rows.slice(0, limit);
      if (rows.length > limit) next = nextLink(request, serviceRoot, query, isKeysetOrder(listQuery.order), page, limit);
      pages = (async function* () {
        yield page;
      })();
    }
    const extras = { ...(count === undefined ? {} : { count }), ...(next === undefined ? {} : { next }) };
    const chunks =
      format === 'json'
        ? jsonFeed(toEntities(pages), { serviceRoot, select: query.select }, extras)
        : atomFeed(toEntities(pages), { serviceRoot, select: query.select, updated: new Date().toISOString() }, extras);
    return reply.send(Readable.from(chunks));
  }

  app.get('/', handle);
  app.get('/*', handle);
};

/**
 * nextLink is the absolute URL of the page after `page`: the same options, with a `$skiptoken` naming
 * the last entry when the order allows keyset paging (stable while entries are added), else a larger
 * `$skip`; a `$top` shrinks by what this page delivered.
 */
function nextLink(request: FastifyRequest, serviceRoot: string, query: ODataQuery, keyset: boolean, page: EntryRecord[], delivered: number): string {
  const params: [string, string][] = [];
  for (const [name, value] of Object.entries(request.query as Record<string, unknown>)) {
    if (name === '$skiptoken' || name === '$skip' || name === '$top') continue;
    params.push([name, String(value)]);
  }
  if (query.top !== undefined) params.push(['$top', String(query.top - delivered)]);
  if (keyset) {
    // This page already applied any $skip; the next one starts right after its last entry.
    const last = page[page.length - 1]!;
    params.push(['$skiptoken', encodeSkipToken({ timestamp: last.timestamp, uuid: last.uuid })]);
  } else {
    params.push(['$skip', String((query.skip ?? 0) + delivered)]);
  }
  const encode = (text: string) => encodeURIComponent(text).replace(/%24/g, '$').replace(/%2C/g, ',');
  return `${serviceRoot}${ENTITY_SET}?${params.map(([name, value]) => `${encode(name)}=${encode(value)}`).join('&')}`;
}

/** primed starts an async iteration and waits for its first value, then hands the whole sequence on. */
async function primed<T>(source: AsyncGenerator<T>): Promise<AsyncIterable<T>> {
  const first = await source.next();
  return (async function* () {
    if (first.done) return;
    yield first.value;
    yield* source;
  })();
}

export default odataRoutes;
