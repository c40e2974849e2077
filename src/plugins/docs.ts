/**
 * The OpenAPI 3.1 document, generated from the route schemas, at `/openapi.json`, and an interactive
 * reference at `/docs`. The reference's assets are served by this process; nothing loads from elsewhere.
 *
 * Besides what each route declares, the document says here what holds for every operation: an
 * `operationId` (from the method and path), a 400 wherever a request schema validates, a 414 where
 * a path parameter could be too long, a 500 and a
 * 503 everywhere (any request can meet a failure or an unreachable database), the bearer scheme of the
 * admin API (applied by plugins/admin-auth.ts), and the OData interface, whose routes parse their own
 * query language and are described in schemas/odata.ts. The `servers` entry is the service's base
 * URL: BASE_URL, or the address the document was requested at.
 */
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { baseUrlOf } from './links.ts';
import { PROBLEM_SCHEMA_ID } from '../schemas/api.ts';
import { ODATA_COMPONENTS, ODATA_PATHS } from '../schemas/odata.ts';
import { BEARER_SCHEME } from './admin-auth.ts';

type Json = Record<string, unknown>;

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const problem = (description: string) => ({ description, content: { 'application/problem+json': { schema: { $ref: `#/components/schemas/${PROBLEM_SCHEMA_ID}` } } } });

/** Answers any operation can give, described once. */
const COMMON_RESPONSES = {
  BadRequest: problem('The request is not valid: the detail names the parameter or field (also in `parameter` or `field`).'),
  UriTooLong: problem('A path segment is longer than the service takes (200 characters).'),
  ServerError: problem('The server failed; the detail names the request id (also in `X-Request-Id`).'),
  Unavailable: problem('The database cannot be reached, or the server is overloaded; `Retry-After` says when to try again.'),
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

/** withCommonAnswers adds what holds for every operation to a path item, in place. */
function withCommonAnswers(pathItem: Json): void {
  for (const method of METHODS) {
    const operation = pathItem[method] as { responses?: Json; parameters?: unknown[]; requestBody?: unknown } | undefined;
    if (operation === undefined) continue;
    const responses = (operation.responses ??= {});
    const validates = (operation.parameters?.length ?? 0) > 0 || operation.requestBody !== undefined;
    if (validates && responses['400'] === undefined) responses['400'] = { $ref: '#/components/responses/BadRequest' };
    const inPath = (operation.parameters as { in?: string }[] | undefined)?.some((parameter) => parameter.in === 'path') ?? false;
    if (inPath) responses['414'] ??= { $ref: '#/components/responses/UriTooLong' };
    responses['500'] ??= { $ref: '#/components/responses/ServerError' };
    responses['503'] ??= { $ref: '#/components/responses/Unavailable' };
  }
}

/** documentFor is the document as served to `request`: with its `servers` entry. */
function documentFor(document: Json, request: FastifyRequest): Json {
  return { ...document, servers: [{ url: baseUrlOf(request), description: 'This service' }] };
}

export default fp(
  async function docsPlugin(app: FastifyInstance) {
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: app.config.appName,
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
        ],
        components: {
          securitySchemes: {
            [BEARER_SCHEME]: {
              type: 'http',
              scheme: 'bearer',
              description: 'An admin token, created with `nonsense token create <label>` and shown once.',
            },
          },
        },
      },
      // Shared schemas keep their own names in `components.schemas` (Problem, not def-0).
      refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
      transform: ({ schema, url, route }) => {
        if (schema === undefined || schema.hide) return { schema, url };
        const method = ([] as string[]).concat(route.method).find((m) => m !== 'HEAD') ?? 'GET';
        return { schema: { operationId: operationIdOf(method, url), ...schema }, url };
      },
      transformObject: (documents) => {
        const document = ('openapiObject' in documents ? documents.openapiObject : documents.swaggerObject) as Json;
        const paths = { ...(document.paths as Json), ...ODATA_PATHS } as Record<string, Json>;
        for (const pathItem of Object.values(paths)) withCommonAnswers(pathItem);
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
          },
        };
      },
    });
    // Everything the page needs is served from here. Its answers are shown with inline style
    // attributes (syntax highlighting); "Try it out" calls this origin, or BASE_URL's.
    const connect = app.config.baseUrl === null ? "'self'" : `'self' ${new URL(app.config.baseUrl).origin}`;
    await app.register(swaggerUi, {
      routePrefix: '/docs',
      uiConfig: { validatorUrl: null, docExpansion: 'list', deepLinking: true, persistAuthorization: false },
      staticCSP:
        "default-src 'self'; base-uri 'self'; form-action 'self'; frame-ancestors 'self'; object-src 'none'; " +
        `font-src 'self' data:; img-src 'self' data:; script-src 'self'; script-src-attr 'none'; style-src 'self' 'unsafe-inline'; connect-src ${connect}`,
      transformSpecification: (document, request) => documentFor(document as Json, request),
    });
    app.get('/openapi.json', { schema: { hide: true } }, async (request) => documentFor(app.swagger() as unknown as Json, request));
  },
  { name: 'docs', dependencies: [] },
);
