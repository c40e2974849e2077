/**
 * Errors, in one place: every error leaves as `application/problem+json` (RFC 9457) with a detail a
 * person can act on, except that a browser asking for one of the site's paths gets the same error as a
 * page of the site (`web/error-page.ts`). Unknown paths are 404, known paths with another method 405 with `Allow`. A 5xx is
 * logged with its request id and its details stay inside the process.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { STATUS_CODES } from 'node:http';
import { databaseUnavailable } from '../metrics/registry.ts';
import { Problem } from '../schemas/api.ts';
import { PoolBusy } from '../services/worker-pool/index.ts';
import { EXPECTS } from '../schemas/validator.ts';
import { isSitePath, prefersHtml, sendErrorPage } from '../web/error-page.ts';

/** HttpProblem is thrown by handlers for an expected failure; the error handler renders it. */
export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly extensions: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = 'HttpProblem';
  }
}

export const badRequest = (detail: string, extensions?: Record<string, unknown>) => new HttpProblem(400, detail, extensions);
export const notFound = (detail: string) => new HttpProblem(404, detail);

/** methodNotAllowed is the 405 for `method` on `path`: `Allow` and the detail list the same methods. */
export function methodNotAllowed(method: string, path: string, allowed: readonly string[]): HttpProblem {
  const list = allowed.join(', ');
  return new HttpProblem(405, `${method} is not allowed on ${truncate(path)}; allowed: ${list}.`, {}, { allow: list });
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/**
 * requireBodyType is a `preValidation` hook answering 415 unless the request declares one of `types`
 * as its body's type. Before validation, so a body of the wrong kind is a 415, not a schema 400.
 */
export function requireBodyType(...types: string[]) {
  const described = types.join(', ');
  return async (request: FastifyRequest): Promise<void> => {
    const type = request.headers['content-type'] ?? '';
    const base = type.split(';', 1)[0]!.trim().toLowerCase();
    if (!types.includes(base)) {
      throw new HttpProblem(415, `Send the body as ${described}; got ${type === '' ? 'no content type' : `"${type.slice(0, 60)}"`}.`);
    }
  };
}

/** requireJson is the `preValidation` hook of routes that take a JSON body. */
export const requireJson = requireBodyType('application/json');

/** problemBody builds the problem+json document for a status. */
export function problemBody(status: number, detail: string, extensions: Record<string, unknown> = {}): string {
  return JSON.stringify({ type: 'about:blank', title: STATUS_CODES[status] ?? 'Error', status, detail, ...extensions });
}

/**
 * sendProblem writes an error response: problem+json, or, for a browser on one of the site's paths
 * (content negotiation on Accept), the site's error page with the same status and headers.
 */
export function sendProblem(reply: FastifyReply, status: number, detail: string, extensions?: Record<string, unknown>) {
  const { request } = reply;
  if (isSitePath(request.url.split('?', 1)[0]!)) {
    // The answer depends on Accept here, so caches must key on it.
    const vary = reply.getHeader('vary');
    reply.header('vary', vary ? `${String(vary)}, Accept` : 'Accept');
    if (prefersHtml(request.headers.accept)) return sendErrorPage(reply, status, detail);
  }
  return reply.code(status).type(PROBLEM_CONTENT_TYPE).send(problemBody(status, detail, extensions));
}

/** Seconds a client is asked to wait when the database is unreachable or busy. */
export const DATABASE_RETRY_AFTER_S = 5;

// Socket-level failures to reach a server, and PostgreSQL SQLSTATEs of class 08 (connection
// exception) plus 57P01-57P03 (the server is shutting down or starting) and 53300 (too many
// connections): the database is away or full, not the request wrong.
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', '57P01', '57P02', '57P03', '53300']);
// node-postgres reports a lost connection and a full pool by message only.
const UNREACHABLE_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed and is not queryable|Connection ended unexpectedly/;

/**
 * isDatabaseUnavailable tells whether an error means the database cannot be used right now (server
 * unreachable, connection lost, SQLite locked by another process beyond the busy timeout), so the
 * answer is 503 with Retry-After rather than 500.
 */
export function isDatabaseUnavailable(error: unknown, depth = 0): boolean {
  if (error === null || typeof error !== 'object' || depth > 3) return false;
  const { code, message, errors, cause } = error as { code?: unknown; message?: unknown; errors?: unknown; cause?: unknown };
  if (typeof code === 'string' && (UNREACHABLE_CODES.has(code) || code.startsWith('08') || code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_'))) {
    return true;
  }
  if (typeof message === 'string' && UNREACHABLE_MESSAGES.test(message)) return true;
  // A host name with several addresses fails as an AggregateError of one error per address.
  if (Array.isArray(errors) && errors.some((e) => isDatabaseUnavailable(e, depth + 1))) return true;
  return isDatabaseUnavailable(cause, depth + 1);
}

const ALLOW_CANDIDATES = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** Translates Fastify's own error codes into details worth reading. */
function describeFrameworkError(error: FastifyError, request: FastifyRequest): { status: number; detail: string } | null {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 415, detail: `The content type "${request.headers['content-type'] ?? ''}" is not accepted here; send application/json.` };
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, detail: `The request body is too large: at most ${formatBytes(request.routeOptions.bodyLimit)} are accepted here.` };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { status: 400, detail: 'The request body is empty; send a JSON document.' };
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return { status: 400, detail: 'The request body is not valid JSON; check its quotes, commas and brackets (the key "__proto__" is refused too).' };
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { status: 400, detail: 'The request body does not have the length its Content-Length header announces.' };
    default:
      return null;
  }
}

/** An Ajv error as the request validator reports it (verbose: with the data and the schema). */
interface SchemaError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  data?: unknown;
  parentSchema?: Schema;
}

interface Schema {
  type?: string | string[];
  format?: string;
  enum?: unknown[];
  const?: unknown;
  anyOf?: Schema[];
  oneOf?: Schema[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  examples?: unknown[];
  [EXPECTS]?: string;
}

const NOUNS: Record<string, string> = { querystring: 'parameter', params: 'path parameter', headers: 'header', body: 'field' };

/** characters counts code points, as the schemas' length limits do. */
function characters(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

/** expectation says in words what a schema accepts: "one of: csv, json, txt", "a UUID such as …". */
function expectation(schema: Schema | undefined): string {
  if (schema === undefined) return 'something else';
  if (schema[EXPECTS] !== undefined) return schema[EXPECTS];
  if (schema.enum !== undefined) return `one of: ${schema.enum.join(', ')}`;
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  const choices = schema.anyOf ?? schema.oneOf;
  if (choices !== undefined) {
    if (choices.every((choice) => choice.const !== undefined)) return `one of: ${choices.map((choice) => choice.const).join(', ')}`;
    return choices.map(expectation).join(' or ');
  }
  const types = ([] as string[]).concat(schema.type ?? []);
  if (types.length > 1) return types.map((type) => expectation({ ...schema, type })).join(' or ');
  switch (types[0]) {
    case 'string':
      if (schema.format === 'uuid') return 'a UUID such as 6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11';
      if (schema.format !== undefined) return `a string in the format ${schema.format}`;
      return schema.maxLength === undefined ? 'a string' : `a string of at most ${schema.maxLength} characters`;
    case 'integer': {
      const { minimum: min, maximum: max } = schema;
      const range =
        min === 0 && (max === undefined || max >= 1e9) ? 'a non-negative integer'
        : min !== undefined && max !== undefined ? `an integer from ${min} to ${max}`
        : min !== undefined ? `an integer of at least ${min}`
        : 'an integer';
      return schema.examples?.[0] === undefined ? range : `${range}, such as ${schema.examples[0]}`;
    }
    case 'number':
      return 'a number';
    case 'boolean':
      return 'true or false';
    case 'null':
      return 'null';
    case 'array': {
      const items = schema.items?.type === 'string' ? 'strings' : 'values';
      const { minItems: min, maxItems: max } = schema;
      if (min !== undefined && max !== undefined) return `a list of ${min} to ${max} ${items}`;
      return max !== undefined ? `a list of at most ${max} ${items}` : `a list of ${items}`;
    }
    case 'object': {
      const names = Object.keys(schema.properties ?? {});
      const required = names.filter((name) => schema.required?.includes(name)).map((name) => `"${name}"`);
      const optional = names.filter((name) => !schema.required?.includes(name)).map((name) => `"${name}"`);
      if (names.length === 0) return 'a JSON object';
      const listed = required.length > 0 ? `${and(required)}${optional.length > 0 ? ` and optionally ${and(optional)}` : ''}` : `any of ${and(optional)}`;
      return `a JSON object with ${listed}`;
    }
    default:
      return 'something else';
  }
}

/** and lists words as a sentence does: `"a", "b" and "c"`. */
function and(words: string[]): string {
  return words.length < 2 ? words.join('') : `${words.slice(0, -1).join(', ')} and ${words.at(-1)}`;
}

/** given names what was sent, briefly. */
function given(data: unknown): string {
  if (typeof data === 'string') return `"${data.length > 40 ? `${data.slice(0, 37)}...` : data}"`;
  if (typeof data === 'number' || typeof data === 'boolean') return String(data);
  if (data === null) return 'null';
  if (Array.isArray(data)) return 'a list';
  return data === undefined ? 'nothing' : 'an object';
}

/** The path of a field as people write it: `values[3]`, `entry.text`. */
function fieldPath(instancePath: string): string {
  return instancePath
    .split('/')
    .slice(1)
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce((path, part) => (/^\d+$/.test(part) ? `${path}[${part}]` : path === '' ? part : `${path}.${part}`), '');
}

/**
 * describeValidation turns the first schema error of a request part (`body`, `querystring`, `params`,
 * `headers`) into a sentence in the service's words, naming the field or parameter, and says which
 * one it is (null when the whole body is wrong). The API and `nonsense export` both use it.
 */
export function describeValidation(ajvErrors: readonly object[], context: string): { detail: string; name: string | null } {
  const errors = ajvErrors as readonly SchemaError[];
  // Of a failed choice (anyOf), the choice itself is described, not the first alternative tried.
  const error = errors.find((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf') ?? errors[0];
  const noun = NOUNS[context] ?? 'field';
  if (error === undefined) return { detail: `The ${context === 'body' ? 'body' : `${noun}s`} of the request are not valid.`, name: null };
  const schema = error.parentSchema;
  const at = fieldPath(error.instancePath);
  if (error.keyword === 'required') {
    const missing = String(error.params.missingProperty);
    const name = at === '' ? missing : `${at}.${missing}`;
    const expected = expectation(schema?.properties?.[missing]);
    return { detail: `The ${noun} "${name}" is required; it must be ${expected}.`, name };
  }
  const subject = at === '' ? (context === 'body' ? 'The body' : `The ${noun}s`) : `The ${noun} "${at}"`;
  const name = at === '' ? null : at;
  const data = error.data;
  if (context !== 'body' && Array.isArray(data)) return { detail: `${subject} is given more than once; give it once.`, name };
  switch (error.keyword) {
    case 'maxLength':
      return { detail: `${subject} has ${characters(String(data))} characters; at most ${error.params.limit} are allowed.`, name };
    case 'minLength':
      return { detail: error.params.limit === 1 ? `${subject} is empty.` : `${subject} has ${characters(String(data))} characters; at least ${error.params.limit} are needed.`, name };
    case 'minItems':
    case 'maxItems':
      return { detail: `${subject} must be ${expectation(schema)}; it has ${(data as unknown[]).length}.`, name };
    case 'additionalProperties':
      return { detail: `${subject} has the unknown field "${String(error.params.additionalProperty)}".`, name };
    default:
      return { detail: `${subject} must be ${expectation(schema)}; got ${given(data)}.`, name };
  }
}

/** How an error is answered: status, a detail a person can act on, and headers to add. */
export interface ErrorAnswer {
  status: number;
  detail: string;
  extensions?: Record<string, unknown>;
  headers?: Record<string, string>;
}

/**
 * classifyError decides how an error is answered, logging a 5xx with its request id and counting
 * database outages. It is the one classification of errors: the problem+json handler below and the
 * OData interface (its own error format) both render its answer.
 */
export function classifyError(error: FastifyError, request: FastifyRequest): ErrorAnswer {
  if (error instanceof HttpProblem) return { status: error.status, detail: error.detail, extensions: error.extensions, headers: error.headers };
  if (error.validation) {
    const context = error.validationContext ?? 'body';
    const { detail, name } = describeValidation(error.validation, context);
    // The field or parameter at fault, for programs: `parameter` in the URL, `field` in the body.
    return { status: 400, detail, extensions: name === null ? {} : { [context === 'body' ? 'field' : 'parameter']: name } };
  }
  const known = describeFrameworkError(error, request);
  if (known) return known;
  if (error instanceof PoolBusy) return { status: 503, detail: error.message, headers: error.headers };
  if (isDatabaseUnavailable(error)) {
    databaseUnavailable.inc();
    request.log.warn({ reqId: request.id, method: request.method, url: request.url, err: error }, 'database unavailable');
    return {
      status: 503,
      detail: `The database is not available at the moment; try again in ${DATABASE_RETRY_AFTER_S} s.`,
      headers: { 'retry-after': String(DATABASE_RETRY_AFTER_S) },
    };
  }
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) return { status, detail: error.message || STATUS_CODES[status] || 'The request was not accepted.' };
  request.log.error({ reqId: request.id, method: request.method, url: request.url, err: error }, 'request failed');
  return {
    status: status >= 500 && status < 600 ? status : 500,
    detail: `The server could not complete the request. If this persists, report it with request id ${request.id}.`,
  };
}

export default fp(
  async function problemPlugin(app: FastifyInstance) {
    // Routes document their errors with this shared schema (schemas/api.ts: problemResponses).
    app.addSchema(Problem);
    app.setErrorHandler((error: FastifyError, request, reply) => {
      // A validator set before the failure named the representation that was not sent.
      reply.removeHeader('etag');
      const answer = classifyError(error, request);
      if (answer.headers) reply.headers(answer.headers);
      return sendProblem(reply, answer.status, answer.detail, answer.extensions);
    });

    app.setNotFoundHandler((request, reply) => {
      const path = request.url.split('?', 1)[0]!;
      const allowed = ALLOW_CANDIDATES.filter((method) => method !== request.method && app.findRoute({ method, url: path }) !== null);
      if (allowed.length > 0) {
        const problem = methodNotAllowed(request.method, path, allowed);
        reply.headers(problem.headers);
        return sendProblem(reply, 405, problem.detail);
      }
      return sendProblem(reply, 404, `There is nothing at ${truncate(path)}. The API lives under /api/v1; see /docs.`);
    });
  },
  { name: 'problem' },
);

/** formatBytes writes a size limit as people read it: 16 KiB, 256 KiB, 1 MiB, 300 bytes. */
export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

function truncate(path: string): string {
  return path.length > 120 ? `${path.slice(0, 117)}...` : path;
}
