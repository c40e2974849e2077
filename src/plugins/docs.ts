/**
 * The OpenAPI 3.1 document, generated from the route schemas, at `/openapi.json`, and an interactive
 * reference at `/docs`. The reference's assets are served by this process; nothing loads from elsewhere.
 *
 * Besides what each route declares, the document says here what holds for every operation: an
 * `operationId` (from the method and path), a 400 wherever a request schema validates, a 414 where
 * a router's path parameter could be too long, a 405 with `Allow` (the path's other methods), a 408
 * and a 431 (the raw answers to a request not received in time or with headers too large), a 500
 * and a 503 everywhere (any request can meet a failure or an unreachable database), the response
 * headers of every answer (schemas/headers.ts, described once in `components.headers`), the CORS
 * preflight of every path as its `options` operation, the bearer scheme of the admin API (applied by
 * plugins/admin-auth.ts), and the OData interface, whose routes parse their own query language and
 * are described in schemas/odata.ts. The `servers` entry is the service's base
 * URL: BASE_URL, or the address the document was requested at.
 *
 * Both are made after the start, not during it: the Swagger plugins (and the `yaml` package they
 * load) were a good part of the time to the first answer (src/runtime/README.md). At start this
 * plugin only collects the routes as Fastify declares them; a second Fastify instance, never
 * listening, declares the same routes and serves both, and `/docs` forwards to it. The server builds
 * it in the background once it listens (`prepareDocs`, a step at a time); otherwise (tests, tools)
 * the first request for the document or the reference does.
 */
import { setImmediate as giveWay } from 'node:timers/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import { absoluteBase, baseUrlOf, varyOnHost } from './links.ts';
import { notFound } from '../http/problem.ts';
import { PROBLEM_SCHEMA_ID } from '../schemas/api.ts';
import { RESPONSE_HEADERS, type ResponseHeaderName } from '../schemas/headers.ts';
import { ODATA_COMPONENTS, ODATA_PATHS } from '../schemas/odata.ts';
import { BEARER_SCHEME } from './admin-auth.ts';

type Json = Record<string, unknown>;

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const headerRef = (name: ResponseHeaderName) => ({ $ref: `#/components/headers/${name}` });
const headerRefs = (...names: ResponseHeaderName[]) => Object.fromEntries(names.map((name) => [name, headerRef(name)]));
/** What every answer of a route carries; the raw answers to broken HTTP (408, 431) carry none of it. */
const ROUTED = ['X-Request-Id', 'Cache-Control'] as const;
const problem = (description: string, headers: Json = headerRefs(...ROUTED)) => ({
  description,
  headers,
  content: { 'application/problem+json': { schema: { $ref: `#/components/schemas/${PROBLEM_SCHEMA_ID}` } } },
});
const RATE_LIMIT_HEADERS = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'] as const;

/** Answers any operation can give, described once. */
const COMMON_RESPONSES = {
  BadRequest: problem(
    'The request is not valid: the detail names the parameter or field (also in `parameter` or `field`).',
    headerRefs(...ROUTED, ...RATE_LIMIT_HEADERS),
  ),
  UriTooLong: problem('A path segment is longer than the service takes (200 characters).'),
  MethodNotAllowed: problem('The path has no such method; `Allow` lists the ones it has.', headerRefs(...ROUTED, 'Allow')),
  RequestTimeout: problem('The request was not received in time; the connection is closed.', {}),
  HeadersTooLarge: problem('The request headers are larger than the server takes; the connection is closed.', {}),
  ServerError: problem('The server failed; the detail names the request id (also in `X-Request-Id`).', headerRefs(...ROUTED, ...RATE_LIMIT_HEADERS)),
  Unavailable: problem(
    'The database cannot be reached, the server is overloaded or its read workers are busy; `Retry-After` says when to try again.',
    headerRefs(...ROUTED, 'Retry-After', ...RATE_LIMIT_HEADERS),
  ),
  Preflight: { description: 'A CORS preflight (or any OPTIONS request): every origin may call the API.', headers: headerRefs('X-Request-Id', 'Access-Control-Allow-Methods', 'Access-Control-Allow-Headers', 'Access-Control-Max-Age') },
};

/**
 * operationIdOf names an operation after its method and path, for generated clients:
 * `GET /api/v1/nonsense/{id}.png` → `getNonsenseByIdPng`, `POST /api/v1/admin/reports/{id}/accept` →
 * `postAdminReportsByIdAccept`.
 */
export function operationIdOf(method: string, url: string): string {
  const words = url
    .replace(/^\/api\/v1\//, '/')
    .split(/[/.]/)
    .filter((part) => part !== '')
    .flatMap((part) => {
      const param = /^[:{]([A-Za-z0-9_]+)}?$/.exec(part);
      return param ? ['by', param[1]!] : part.replace(/[^A-Za-z0-9]+/g, ' ').trim().split(' ');
    });
  return method.toLowerCase() + words.map((word) => word.charAt(0).toUpperCase() + word.slice(1)).join('');
}

/** Headers only one operation sends, by operationId and status: the export's file name. */
const OPERATION_HEADERS: Record<string, Record<string, ResponseHeaderName[]>> = {
  getNonsense: { 200: ['Content-Disposition'] },
};

interface OperationObject {
  operationId?: string;
  responses?: Record<string, Json>;
  parameters?: { in?: string }[];
  requestBody?: unknown;
}

/**
 * withHeaders gives a response the headers it carries besides its route's own: the request id and
 * caching everywhere a route answers, `Retry-After` on 429 and 503, `WWW-Authenticate` on 401, the
 * rate limit's where the operation is limited, `ETag` where it revalidates, OData's version there.
 * Headers a route names (schemas/headers.ts) become references to the one description, and so do
 * the few only one operation sends (OPERATION_HEADERS).
 */
function withHeaders(status: string, response: Json, options: { limited: boolean; revalidates: boolean; odata: boolean; own: ResponseHeaderName[] }): void {
  if (response.$ref !== undefined) return;
  const headers: Json = {};
  for (const [name, value] of Object.entries((response.headers as Json | undefined) ?? {})) {
    headers[name] = name in RESPONSE_HEADERS ? headerRef(name as ResponseHeaderName) : value;
  }
  const add = (...names: ResponseHeaderName[]) => {
    for (const name of names) headers[name] ??= headerRef(name);
  };
  add(...options.own, ...ROUTED);
  if (status === '401') add('WWW-Authenticate');
  if (status === '429' || status === '503') add('Retry-After');
  if (options.limited) add(...RATE_LIMIT_HEADERS);
  if (options.revalidates && (status === '200' || status === '304')) add('ETag');
  if (options.odata) add('DataServiceVersion');
  response.headers = headers;
}

/**
 * withCommonAnswers adds what holds for every operation to a path item, in place: the statuses any
 * request can meet, the response headers, and the CORS preflight, which every path answers.
 */
function withCommonAnswers(url: string, pathItem: Json): void {
  const odata = url.startsWith('/odata/');
  const operations = METHODS.filter((method) => pathItem[method] !== undefined);
  for (const method of operations) {
    const operation = pathItem[method] as OperationObject;
    const responses = (operation.responses ??= {});
    // Rate-limited: every public read (plugins/rate-limits.ts) and the report, which declare the 429.
    const limited = responses['429'] !== undefined;
    const revalidates = responses['304'] !== undefined;
    for (const [status, response] of Object.entries(responses)) {
      withHeaders(status, response, { limited, revalidates, odata, own: OPERATION_HEADERS[operation.operationId ?? '']?.[status] ?? [] });
    }
    const validates = (operation.parameters?.length ?? 0) > 0 || operation.requestBody !== undefined;
    if (validates && responses['400'] === undefined) responses['400'] = { $ref: '#/components/responses/BadRequest' };
    // Only a path parameter of the router can be too long; OData parses its own path, and answers a
    // long key as any other bad key (400).
    const inPath = operation.parameters?.some((parameter) => parameter.in === 'path') ?? false;
    if (inPath && !odata) responses['414'] ??= { $ref: '#/components/responses/UriTooLong' };
    responses['405'] ??= { $ref: `#/components/responses/${odata ? 'ODataMethodNotAllowed' : 'MethodNotAllowed'}` };
    responses['408'] ??= { $ref: '#/components/responses/RequestTimeout' };
    responses['431'] ??= { $ref: '#/components/responses/HeadersTooLarge' };
    responses['500'] ??= { $ref: '#/components/responses/ServerError' };
    responses['503'] ??= { $ref: '#/components/responses/Unavailable' };
  }
  // Any OPTIONS request is answered as a CORS preflight (plugins/headers.ts), before authentication.
  const first = pathItem[operations[0]!] as OperationObject;
  const inPath = first.parameters?.filter((parameter) => parameter.in === 'path') ?? [];
  pathItem.options = {
    operationId: `options${(first.operationId ?? operationIdOf('get', url)).replace(/^[a-z]+/, '')}`,
    summary: 'CORS preflight',
    description: 'Answered for every path and origin, without credentials: the methods and requested headers are allowed.',
    tags: ['cors'],
    ...(inPath.length > 0 ? { parameters: inPath } : {}),
    responses: {
      204: { $ref: '#/components/responses/Preflight' },
      // A path parameter with broken percent-encoding is refused before any route.
      ...(inPath.length > 0 ? { 400: { $ref: '#/components/responses/BadRequest' } } : {}),
      408: { $ref: '#/components/responses/RequestTimeout' },
      431: { $ref: '#/components/responses/HeadersTooLarge' },
      500: { $ref: '#/components/responses/ServerError' },
      503: { $ref: '#/components/responses/Unavailable' },
    },
  };
}

/** documentFor is the document as served at `baseUrl`: with its `servers` entry. */
function documentFor(document: Json, baseUrl: string): Json {
  return { ...document, servers: [{ url: baseUrl, description: 'This service' }] };
}

/**
 * The base URL of the request a forwarded one stands for, computed by this process from the real
 * request (its Host, and the proxy's headers as TRUST_PROXY allows). The reference's instance is
 * reached only through the forwarding below, which always sets it.
 */
const BASE_URL_HEADER = 'x-nonsense-base-url';

/**
 * Request headers passed on to the reference's instance: the validators its static files answer 304
 * to. Not Range: a range is answered with the whole file, as HTTP allows.
 */
const FORWARDED_REQUEST_HEADERS = ['if-none-match', 'if-modified-since'];

/** Answer headers not passed back: the connection's own, and the length, which is set anew. */
const UNFORWARDED_ANSWER_HEADERS: ReadonlySet<string> = new Set(['connection', 'keep-alive', 'transfer-encoding', 'date', 'content-length']);

/**
 * The reference's static files (Swagger UI's scripts and styles, 2.6 MB in all, the same for the
 * life of the process) are kept once read, and every answer sends the same bytes: a forwarded answer
 * is read whole, so without this each request for the 1.7 MB script would hold a copy of its own
 * until a slow client had read it. A file is kept once by its ETag, however its path is spelled
 * (`%2D` for `-`, say), within a budget of bytes; the paths that lead to kept files, up to a number.
 */
const STATIC_PREFIX = '/docs/static/';
const STATIC_CACHE_BYTES = 8 * 1024 * 1024;
const STATIC_PATHS = 256;

/**
 * The API document, as `/openapi.json` and as the reference's `/docs/json` and `/docs/yaml`, is the
 * same for the life of the process but for its base URL: each is written once per base URL and kept
 * (writing it took about 10 ms of the event loop each time), for this many base URLs at most (one
 * with BASE_URL set; a Host header per base URL otherwise, which a client can vary at will).
 */
const DOCUMENT_BASES = 8;
const DOCUMENT_PATHS: ReadonlySet<string> = new Set(['/docs/json', '/docs/yaml']);

/**
 * Answers read from the reference's instance at once; more requests wait for a turn. Each holds a
 * whole answer while it is read (up to the 1.7 MB script, twice over): without a bound, 200
 * concurrent requests for paths not yet kept (each spelling of a path is one) took the process to
 * 969 MB.
 */
const ASKS_AT_ONCE = 2;

interface ForwardedAnswer {
  status: number;
  headers: Record<string, string | string[]>;
  body: Buffer;
}

/** swaggerOptions describes the service to @fastify/swagger: its info, tags, schemes and the transforms above. */
function swaggerOptions(appName: string) {
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: appName,
        version: '1.0.0',
        description:
          'A read-mostly service over a database of short text entries. Every error of `/api/v1` is ' +
          '`application/problem+json` (RFC 9457); the OData interface answers errors in the OData format. ' +
          'Times are integer Unix seconds. The admin API needs `Authorization: Bearer <token>` ' +
          '(create a token with `nonsense token create <label>`).',
        license: { name: 'MIT', identifier: 'MIT' },
      },
      tags: [
        { name: 'entries', description: 'Random entry, entry by UUID, its share image, status, the export and the galaxy' },
        { name: 'reference', description: 'Custom emojis and variables' },
        { name: 'reports', description: 'Reporting an entry to the moderators' },
        { name: 'admin', description: 'Writing: entries, variables, emojis and the report queue (bearer token)' },
        { name: 'odata', description: 'The read-only OData v2 interface for spreadsheet and BI tools (experimental)' },
        { name: 'operations', description: 'Health and readiness' },
        { name: 'cors', description: 'CORS preflights: every path answers OPTIONS, for any origin' },
      ],
      components: {
        securitySchemes: {
          [BEARER_SCHEME]: {
            type: 'http' as const,
            scheme: 'bearer',
            description: 'An admin token, created with `nonsense token create <label>` and shown once.',
          },
        },
      },
    },
    // Shared schemas keep their own names in `components.schemas` (Problem, not def-0).
    refResolver: { buildLocalReference: (json: Json, _baseUri: unknown, _fragment: unknown, i: number) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    transform: ({ schema, url, route }: { schema?: Json & { hide?: boolean }; url: string; route: { method: string | string[] } }) => {
      if (schema === undefined || schema.hide) return { schema, url };
      const method = ([] as string[]).concat(route.method).find((m) => m !== 'HEAD') ?? 'GET';
      return { schema: { operationId: operationIdOf(method, url), ...schema }, url };
    },
    transformObject: (documents: { openapiObject?: unknown; swaggerObject?: unknown }) => {
      const document = ('openapiObject' in documents ? documents.openapiObject : documents.swaggerObject) as Json;
      // A copy of the OData paths: the common answers are added in place.
      const paths = { ...(document.paths as Json), ...structuredClone(ODATA_PATHS) } as Record<string, Json>;
      for (const [url, pathItem] of Object.entries(paths)) withCommonAnswers(url, pathItem);
      const components = document.components as Json;
      return {
        ...document,
        // Public by default: only the admin operations name the bearer scheme (plugins/admin-auth.ts).
        security: [],
        paths,
        components: {
          ...components,
          schemas: { ...(components.schemas as Json), ...ODATA_COMPONENTS.schemas },
          responses: { ...COMMON_RESPONSES, ...ODATA_COMPONENTS.responses },
          headers: RESPONSE_HEADERS,
        },
      };
    },
  };
}

/**
 * describe builds the instance that describes `app`: the Swagger plugins, and `routes` declared
 * again with their schemas (never called, so nothing is compiled for them).
 */
async function describe(app: FastifyInstance, routes: readonly RouteOptions[]): Promise<FastifyInstance> {
  // One step at a time, the event loop's other work in between: loading the Swagger packages (and
  // `yaml`) is the largest step, declaring the routes and writing the document the others.
  const { default: Fastify } = await import('fastify');
  await giveWay();
  const { default: swagger } = await import('@fastify/swagger');
  await giveWay();
  const { default: swaggerUi } = await import('@fastify/swagger-ui');
  await giveWay();
  const docs = Fastify();
  docs.setValidatorCompiler(() => () => true);
  docs.setSerializerCompiler(() => (data) => JSON.stringify(data));
  for (const schema of Object.values(app.getSchemas() as Record<string, Json>)) docs.addSchema(schema);
  await docs.register(swagger, swaggerOptions(app.config.appName) as never);
  // Everything the page needs is served from here. Its answers are shown with inline style
  // attributes (syntax highlighting); "Try it out" calls this origin, or BASE_URL's.
  const connect = app.config.baseUrl === null ? "'self'" : `'self' ${new URL(app.config.baseUrl).origin}`;
  await docs.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { validatorUrl: null, docExpansion: 'list', deepLinking: true, persistAuthorization: false },
    staticCSP:
      "default-src 'self'; base-uri 'self'; form-action 'self'; frame-ancestors 'self'; object-src 'none'; " +
      `font-src 'self' data:; img-src 'self' data:; script-src 'self'; script-src-attr 'none'; style-src 'self' 'unsafe-inline'; connect-src ${connect}`,
    transformSpecification: (document, request) => documentFor(document as Json, String(request.headers[BASE_URL_HEADER])),
  });
  for (const [i, route] of routes.entries()) {
    if (i % 25 === 24) await giveWay();
    const { method, url, schema, config, constraints } = route;
    const links = (route as { links?: unknown }).links;
    docs.route({ method, url, ...(schema === undefined ? {} : { schema }), ...(config === undefined ? {} : { config }), ...(constraints === undefined ? {} : { constraints }), ...(links === undefined ? {} : { links }), handler: () => undefined } as RouteOptions);
  }
  await docs.ready();
  await giveWay();
  // The document is written once, here, rather than by the first request for it.
  docs.swagger();
  return docs;
}

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * prepareDocs builds the document and the reference ahead of their first request, a step at a
     * time (the server calls it once it listens and the schemas left have compiled).
     */
    prepareDocs(): Promise<void>;
  }
}

export default fp(
  async function docsPlugin(app: FastifyInstance) {
    // Every route declared from here on, as @fastify/swagger would collect it: not its HEAD twins,
    // which the document leaves out, nor the hidden ones (this plugin's own among them).
    const routes: RouteOptions[] = [];
    app.addHook('onRoute', (route) => {
      if (route.method !== 'HEAD' && !(route.schema as { hide?: boolean } | undefined)?.hide) routes.push(route);
    });
    let described: Promise<FastifyInstance> | null = null;
    const docs = (): Promise<FastifyInstance> => {
      described ??= describe(app, routes).catch((error: unknown) => {
        described = null;
        throw error;
      });
      return described;
    };
    app.decorate('prepareDocs', async () => {
      await docs();
    });
    app.addHook('onClose', async () => {
      if (described !== null) await (await described.catch(() => null))?.close();
    });

    const documents = new Map<string, string>();
    app.get('/openapi.json', { schema: { hide: true } }, async (request, reply) => {
      const base = absoluteBase(request, reply);
      let text = documents.get(base);
      if (text === undefined) {
        text = JSON.stringify(documentFor((await docs()).swagger() as unknown as Json, base));
        if (documents.size < DOCUMENT_BASES) documents.set(base, text);
      }
      return reply.type('application/json; charset=utf-8').send(text);
    });

    const filesByTag = new Map<string, ForwardedAnswer>();
    const filesByPath = new Map<string, ForwardedAnswer>();
    /** The reference's copies of the document, by path and base URL. */
    const documentAnswers = new Map<string, ForwardedAnswer>();
    let staticBytes = 0;

    /** keep returns the kept answer with the same ETag as `answer` (keeping it when there is room), or `answer`. */
    const keep = (path: string, answer: ForwardedAnswer): ForwardedAnswer => {
      const tag = answer.headers.etag;
      if (answer.status !== 200 || typeof tag !== 'string') return answer;
      let kept = filesByTag.get(tag);
      if (kept === undefined && staticBytes + answer.body.length <= STATIC_CACHE_BYTES) {
        filesByTag.set(tag, answer);
        staticBytes += answer.body.length;
        kept = answer;
      }
      if (kept !== undefined && filesByPath.size < STATIC_PATHS) filesByPath.set(path, kept);
      return kept ?? answer;
    };

    let asking = 0;
    const turns: (() => void)[] = [];

    /**
     * ask has the reference's instance answer a GET of `url`, with the request headers `headers`, in
     * turn; unless, once its turn has come, `kept` has the answer (read meanwhile by another).
     */
    const ask = async (url: string, headers: Record<string, string>, kept: () => ForwardedAnswer | undefined): Promise<ForwardedAnswer> => {
      // A turn is taken, or handed over by the ask that ends: `asking` counts the asks running.
      if (asking < ASKS_AT_ONCE) asking++;
      else await new Promise<void>((resolve) => turns.push(resolve));
      try {
        const known = kept();
        if (known !== undefined) return known;
        const answer = await (await docs()).inject({ method: 'GET', url, headers });
        const passed: Record<string, string | string[]> = {};
        for (const [name, value] of Object.entries(answer.headers)) {
          if (value !== undefined && !UNFORWARDED_ANSWER_HEADERS.has(name)) passed[name] = typeof value === 'number' ? String(value) : value;
        }
        return { status: answer.statusCode, headers: passed, body: answer.rawPayload };
      } finally {
        const next = turns.shift();
        if (next === undefined) asking--;
        else next();
      }
    };

    /** forward answers a request for the reference as its instance answers it. */
    const forward = async (request: FastifyRequest, reply: FastifyReply) => {
      const headers: Record<string, string> = { [BASE_URL_HEADER]: baseUrlOf(request) };
      let conditional = false;
      for (const name of FORWARDED_REQUEST_HEADERS) {
        const value = request.headers[name];
        if (typeof value === 'string') {
          headers[name] = value;
          conditional = true;
        }
      }
      const path = request.url.split('?', 1)[0]!;
      // A conditional request is answered by the instance (a 304, as a rule); a plain one may be kept.
      const cacheable = path.startsWith(STATIC_PREFIX) && !conditional;
      const documentKey = DOCUMENT_PATHS.has(path) && !conditional ? `${path}\n${headers[BASE_URL_HEADER]}` : undefined;
      const kept = () => (cacheable ? filesByPath.get(path) : documentKey === undefined ? undefined : documentAnswers.get(documentKey));
      let answer = kept();
      if (answer === undefined) {
        answer = await ask(request.url, headers, kept);
        if (cacheable) answer = keep(path, answer);
        else if (documentKey !== undefined && answer.status === 200 && documentAnswers.size < DOCUMENT_BASES * DOCUMENT_PATHS.size) documentAnswers.set(documentKey, answer);
      }
      // A 404 of Fastify's own format there is one of this process's here (and no path is echoed).
      if (answer.status === 404) throw notFound('The API reference has no such page or file; it starts at /docs.');
      reply.headers(answer.headers);
      // The reference's document (`/docs/json`) names the base URL as its server; its static files
      // are the same for every host.
      if (app.config.baseUrl === null && !path.startsWith(STATIC_PREFIX)) varyOnHost(reply);
      // An empty answer (a redirect, a 304) stays without a body, and so without a Content-Type.
      return reply.code(answer.status).send(answer.body.length === 0 ? undefined : answer.body);
    };
    app.get('/docs', { schema: { hide: true } }, forward);
    app.get('/docs/*', { schema: { hide: true } }, forward);
  },
  { name: 'docs', dependencies: [] },
);
