/**
 * The OData v2 interface (experimental), registered under `/odata/v2`: the service document,
 * `$metadata`, the `nonsense_list` feed (Atom or verbose JSON) with query options and server-driven
 * paging, `$count`, and single entities. Every response, errors and 304s included, carries
 * `DataServiceVersion: 2.0`; every error is in the OData error format. See docs/odata.md.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { setImmediate as giveWay } from 'node:timers/promises';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { CompileContext } from '../../storage/odata-filter.ts';
import { listQueryOf, runODataRead, type ODataAnswer, type ODataRead, type ODataSelection, type WalkPage } from '../../storage/odata-reads.ts';
import { ODataRequestError } from '../../domain/odata/errors.ts';
import { TIME_LIMIT_MS, WALK_PAGE_TIME_LIMIT_MS } from '../../domain/odata/limits.ts';
import { ENTITY_SET } from '../../domain/odata/model.ts';
import { encodeCursor } from '../../domain/entry-selection.ts';
import { checkQueryEncoding, parseQueryOptions, type ODataFormat, type ODataQuery } from '../../domain/odata/query-options.ts';
import { parseResourcePath } from '../../domain/odata/resource-path.ts';
import { CLIENT_VARIABLES, type ServerVariables } from '../../domain/variables.ts';
import { ATOM_ENTRY_CONTENT_TYPE, ATOM_FEED_CONTENT_TYPE, atomEntry, atomFeed } from '../../formats/odata/atom.ts';
import { toODataEntity } from '../../formats/odata/entity.ts';
import { JSON_CONTENT_TYPE, jsonEntry, jsonFeed } from '../../formats/odata/json.ts';
import { METADATA_CONTENT_TYPE, metadataDocument, SERVICE_CONTENT_TYPE, jsonServiceDocument, serviceDocument } from '../../formats/odata/metadata.ts';
import { notModified, revisionTag } from '../../http/cache.ts';
import { setRouteClass } from '../../http/route-classes.ts';
import { isKeysetOrder, STREAM_PAGE_SIZE, TimeLimitError, walksByIndex, type EntryListQuery } from '../../storage/entry-query.ts';
import type { EntryRecord } from '../../domain/records.ts';
import { absoluteBase } from '../../plugins/links.ts';
import { UNSHARED, type FairShare } from '../../plugins/fair-share.ts';
import { odataErrorHandler, sendODataError } from './errors.ts';
import { responseFormatOf } from '../../formats/odata/negotiate.ts';

/**
 * Entities serialised at once. A page from the database (500 rows) is written in chunks of this many,
 * giving way to other requests between them, so that no chunk holds the event loop for long.
 */
const CHUNK_ENTITIES = 100;

/** Entries per page of the feed without `all=true` (docs/odata.md, "Paging"); the plugin option overrides it. */
export const ODATA_PAGE_SIZE = 100;

export interface ODataOptions {
  /** Entries per page of server-driven paging (default ODATA_PAGE_SIZE). */
  pageSize?: number;
  /** The database time of one request (default TIME_LIMIT_MS; see limits.ts). */
  timeLimitMs?: number;
}

const METADATA = metadataDocument();

const odataRoutes: FastifyPluginAsync<ODataOptions> = async (app, options) => {
  const pageSize = options.pageSize ?? ODATA_PAGE_SIZE;
  const timeLimitMs = options.timeLimitMs ?? TIME_LIMIT_MS;
  const { entryQuery, variables, cache } = app.storage;
  const prefix = app.prefix;
  // Registered on its own (a tool, a test), the interface reads on the event loop and charges no one.
  const readWorkers = app.hasDecorator('readWorkers') ? app.readWorkers : null;
  const fairShare: FairShare = app.hasDecorator('fairShare') ? app.fairShare : UNSHARED;
  const quirks = app.storage.database.quirks;
  setRouteClass(app, 'odata');

  app.addHook('onRequest', (_request, reply, done) => {
    reply.header('dataserviceversion', '2.0');
    done();
  });

  app.setErrorHandler(odataErrorHandler);

  // Only GET and HEAD have routes here (OPTIONS is CORS); anything else reaches this handler.
  app.setNotFoundHandler((request, reply) => {
    // As everywhere, the detail lists the methods of Allow (OPTIONS, answered for CORS, is not listed).
    reply.header('allow', 'GET, HEAD');
    return sendODataError(request, reply, 405, `${request.method} is not allowed: this OData interface is read-only; allowed: GET, HEAD.`);
  });

  /** The absolute service root, e.g. `https://example.org/odata/v2/`. */
  const serviceRootOf = (request: FastifyRequest, reply: FastifyReply) => `${absoluteBase(request, reply)}${prefix}/`;

  /** A weak ETag from the revision and everything the response depends on. */
  async function revalidate(request: FastifyRequest, reply: FastifyReply, format: ODataFormat): Promise<boolean> {
    const tag = createHash('sha256').update(JSON.stringify([format, serviceRootOf(request, reply), request.url])).digest('base64url').slice(0, 16);
    return notModified(request, reply, revisionTag(await cache.current(), tag), 'no-cache');
  }

  function compileContext(serverVariables: ServerVariables): CompileContext {
    return { quirks, variableTokens: [...serverVariables.keys(), ...CLIENT_VARIABLES.map((v) => v.name)] };
  }

  /**
   * read runs a read of the entries for `request`: in a read worker for an SQLite file (the filter
   * and order compiled there), else here through the engine's asynchronous driver. Its database time
   * is charged to the client's OData budget, whether it succeeds or not. `continued` marks a later
   * page of a walk, which a full queue never refuses.
   */
  async function read<R extends ODataRead>(request: FastifyRequest, what: R, context: CompileContext, continued = false): Promise<ODataAnswer<R>> {
    const spent = (ms: number) => fairShare.chargeODataTime(request, ms);
    if (readWorkers !== null) return readWorkers.odata(what, context.variableTokens, { client: fairShare.clientOf(request), continued, spent });
    const started = performance.now();
    try {
      return await runODataRead(entryQuery, quirks, context.variableTokens, what);
    } finally {
      spent(performance.now() - started);
    }
  }

  async function handle(request: FastifyRequest, reply: FastifyReply) {
    // The statements a request runs before its first byte share one time limit.
    const deadline = Date.now() + timeLimitMs;
    const timeLeft = () => Math.max(1, deadline - Date.now());
    const url = request.url;
    const queryAt = url.indexOf('?');
    const path = (queryAt === -1 ? url : url.slice(0, queryAt)).slice(prefix.length);
    const resource = parseResourcePath(path);
    if (queryAt !== -1) checkQueryEncoding(url.slice(queryAt + 1));
    const query = parseQueryOptions(request.query as Record<string, unknown>);
    const format = responseFormatOf(request, query.format);
    const serviceRoot = serviceRootOf(request, reply);

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
        fairShare.checkODataTime(request);
        const entry = await app.entryService.findEntry(resource.uuid);
        if (entry === null) throw new ODataRequestError(`There is no entity ${ENTITY_SET}(guid'${resource.uuid}').`, 404);
        if (await revalidate(request, reply, format)) return reply;
        const entity = toODataEntity(entry, await variables.values());
        return format === 'json'
          ? reply.type(JSON_CONTENT_TYPE).send(jsonEntry(entity, { serviceRoot, select: query.select }))
          : reply.type(ATOM_ENTRY_CONTENT_TYPE).send(atomEntry(entity, { serviceRoot, select: query.select, updated: new Date().toISOString() }));
      }
      case 'count': {
        const context = compileContext(await variables.values());
        const selection = selectionOf(query, context);
        if (await revalidate(request, reply, format)) return reply;
        fairShare.checkODataTime(request);
        // $count counts what the same URL without /$count would return across all its pages.
        const total = await read(request, { kind: 'count', selection, timeLimitMs: timeLeft() }, context);
        const counted = Math.max(0, Math.min(query.top ?? Number.POSITIVE_INFINITY, total - (query.skip ?? 0)));
        return reply.type('text/plain;charset=utf-8').send(String(counted));
      }
      case 'collection':
        return collection(request, reply, query, format, serviceRoot, timeLeft);
    }
  }

  /**
   * selectionOf is what a request selects, checked here (compiled once, so that a bad $filter or
   * $orderby is a 400 before anything runs) and passed on as the parsed options.
   */
  function selectionOf(query: ODataQuery, context: CompileContext): ODataSelection & { keyset: boolean; walksByIndex: boolean } {
    const selection: ODataSelection = {
      ...(query.filter ? { filter: query.filter } : {}),
      ...(query.orderBy ? { orderBy: query.orderBy } : {}),
      ...(query.skipToken ? { after: query.skipToken } : {}),
      ...(query.skip ? { offset: query.skip } : {}),
    };
    const listQuery: EntryListQuery = listQueryOf(selection, context);
    const keyset = isKeysetOrder(listQuery.order);
    if (query.skipToken && !keyset) {
      throw new ODataRequestError('$skiptoken only continues an order by timestamp, created or uuid; follow the next link as given.');
    }
    // A walk by index (no condition but a timestamp range, no offset) costs the same small amount per page.
    return { ...selection, keyset, walksByIndex: walksByIndex(listQuery) };
  }

  async function collection(request: FastifyRequest, reply: FastifyReply, query: ODataQuery, format: ODataFormat, serviceRoot: string, timeLeft: () => number) {
    const serverVariables = await variables.values();
    const context = compileContext(serverVariables);
    const { keyset, walksByIndex, ...selection } = selectionOf(query, context);
    if (await revalidate(request, reply, format)) return reply;
    reply.type(format === 'json' ? JSON_CONTENT_TYPE : ATOM_FEED_CONTENT_TYPE);
    // A HEAD runs the reads before the first byte too, so it fails where its GET would; the feed is
    // closed unread (plugins/head.ts).
    fairShare.checkODataTime(request);

    const count = query.inlineCount ? await read(request, { kind: 'count', selection, timeLimitMs: timeLeft() }, context) : undefined;
    const toEntities = async function* (pages: AsyncIterable<EntryRecord[]>) {
      for await (const page of pages) {
        for (let at = 0; at < page.length; at += CHUNK_ENTITIES) {
          if (at > 0) await giveWay();
          yield page.slice(at, at + CHUNK_ENTITIES).map((entry) => toODataEntity(entry, serverVariables));
        }
      }
    };

    let pages: AsyncIterable<EntryRecord[]>;
    let next: string | undefined;
    if (query.all) {
      // The feed as a whole takes as long as it takes. A walk by index has no limit. Any other may
      // cost a scan per page: its first page is bounded like a request, each later one by a wider
      // limit, which stops a walk that re-sorts the database for every page without letting a busy
      // machine cut a feed short. Reading the first page before the headers go out turns a failing
      // query into an error response.
      let remaining = query.top ?? Number.POSITIVE_INFINITY;
      const page = (resume: unknown[] | undefined, timeLimitMs: number) => {
        const limit = Math.min(STREAM_PAGE_SIZE, remaining);
        const what = { kind: 'page' as const, selection, limit, ...(resume ? { resume } : {}), ...(walksByIndex ? {} : { timeLimitMs }) };
        return read(request, what, context, resume !== undefined);
      };
      pages = walk(await page(undefined, timeLeft()), (seek) => page(seek, WALK_PAGE_TIME_LIMIT_MS), (rows) => (remaining -= rows) > 0);
    } else {
      // Reading one more than a page tells whether a next page exists, without counting.
      const limit = Math.min(pageSize, query.top ?? pageSize);
      const mayContinue = query.top === undefined || query.top > limit;
      const rows = await read(request, { kind: 'list', selection, limit: mayContinue ? limit + 1 : limit, timeLimitMs: timeLeft() }, context);
      const page = rows.slice(0, limit);
      if (rows.length > limit) next = nextLink(request, serviceRoot, query, keyset, page, limit);
      pages = (async function* () {
        yield page;
      })();
    }
    const extras = { ...(count === undefined ? {} : { count }), ...(next === undefined ? {} : { next }) };
    const chunks =
      format === 'json'
        ? jsonFeed(toEntities(pages), { serviceRoot, select: query.select }, extras)
        : atomFeed(toEntities(pages), { serviceRoot, select: query.select, updated: new Date().toISOString() }, extras);
    // One chunk read ahead at most: the socket's backpressure, not this stream, decides the pace.
    return reply.send(Readable.from(chunks, { highWaterMark: 1 }));
  }

  /** Past the time limit, a request is refused in words that say what to change. */
  async function handleWithinTime(request: FastifyRequest, reply: FastifyReply) {
    try {
      return await handle(request, reply);
    } catch (error) {
      if (!(error instanceof TimeLimitError)) throw error;
      throw new ODataRequestError(
        `The request needs more than ${timeLimitMs} ms of database time (the limit). Narrow $filter, for example with a ` +
          'timestamp range; order by timestamp, created or uuid; use a smaller $skip; or leave out $inlinecount.',
      );
    }
  }

  // Described in the API document by schemas/odata.ts: OData's URL conventions are no route schema.
  app.get('/', { schema: { hide: true }, config: { heavy: true } }, handleWithinTime);
  app.get('/*', { schema: { hide: true }, config: { heavy: true } }, handleWithinTime);
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
    params.push(['$skiptoken', encodeCursor(last)]);
  } else {
    params.push(['$skip', String((query.skip ?? 0) + delivered)]);
  }
  const encode = (text: string) => encodeURIComponent(text).replace(/%24/g, '$').replace(/%2C/g, ',');
  return `${serviceRoot}${ENTITY_SET}?${params.map(([name, value]) => `${encode(name)}=${encode(value)}`).join('&')}`;
}

/**
 * walk yields the pages of a walk from its first: the next page is asked for (`next`, from where the
 * last ended) while the current one is being sent, one ahead and no more, as long as `more` says the
 * walk wants more after a page of that many entries. Stopping the iteration (a client gone) stops it.
 */
async function* walk(first: WalkPage, next: (seek: unknown[]) => Promise<WalkPage>, more: (rows: number) => boolean): AsyncGenerator<EntryRecord[]> {
  let current = first;
  for (;;) {
    const ahead = current.seek !== null && more(current.rows.length) ? next(current.seek) : null;
    // Its failure is met by the await below, or dropped with it when the client has gone meanwhile;
    // never a rejection without a handler while this page is being sent.
    ahead?.catch(() => {});
    if (current.rows.length > 0) yield current.rows;
    if (ahead === null) return;
    current = await ahead;
  }
}

export default odataRoutes;
