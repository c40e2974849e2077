/**
 * Errors, in one place: every error leaves as `application/problem+json` (RFC 9457) with a detail a
 * person can act on. Unknown paths are 404, known paths with another method 405 with `Allow`. A 5xx is
 * logged with its request id and its details stay inside the process.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { STATUS_CODES } from 'node:http';
import { databaseUnavailable } from '../metrics/registry.ts';

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

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** assertJsonBody answers 415 unless the request declares a JSON body. */
export function assertJsonBody(request: FastifyRequest): void {
  const type = request.headers['content-type'] ?? '';
  if (!/^application\/json\s*(;|$)/i.test(type)) {
    throw new HttpProblem(415, `Send the body as application/json; got ${type === '' ? 'no content type' : `"${type.slice(0, 60)}"`}.`);
  }
}

/** problemBody builds the problem+json document for a status. */
export function problemBody(status: number, detail: string, extensions: Record<string, unknown> = {}): string {
  return JSON.stringify({ type: 'about:blank', title: STATUS_CODES[status] ?? 'Error', status, detail, ...extensions });
}

/** sendProblem writes a problem+json response. */
export function sendProblem(reply: FastifyReply, status: number, detail: string, extensions?: Record<string, unknown>) {
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
      return { status: 413, detail: 'The request body is too large.' };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { status: 400, detail: 'The request body is empty; send a JSON document.' };
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { status: 400, detail: `The request body is not valid JSON: ${error.message}` };
    default:
      return null;
  }
}

function describeValidation(error: FastifyError): string {
  const first = error.validation?.[0];
  const where = error.validationContext ?? 'request';
  if (!first) return `The ${where} is not valid.`;
  const field = first.instancePath ? first.instancePath.replace(/^\//, '').replaceAll('/', '.') : String(first.params?.missingProperty ?? '');
  const name = field ? `${where} field "${field}"` : where;
  if (first.keyword === 'enum') return `The ${name} must be one of: ${(first.params.allowedValues as unknown[]).join(', ')}.`;
  return `The ${name} ${first.message ?? 'is not valid'}.`;
}

export default fp(
  async function problemPlugin(app: FastifyInstance) {
    app.setErrorHandler((error: FastifyError, request, reply) => {
      if (error instanceof HttpProblem) {
        reply.headers(error.headers);
        return sendProblem(reply, error.status, error.detail, error.extensions);
      }
      if (error.validation) return sendProblem(reply, 400, describeValidation(error));
      const known = describeFrameworkError(error, request);
      if (known) return sendProblem(reply, known.status, known.detail);
      if (isDatabaseUnavailable(error)) {
        databaseUnavailable.inc();
        request.log.warn({ reqId: request.id, method: request.method, url: request.url, err: error }, 'database unavailable');
        reply.header('retry-after', String(DATABASE_RETRY_AFTER_S));
        return sendProblem(reply, 503, `The database is not available at the moment; try again in ${DATABASE_RETRY_AFTER_S} s.`);
      }
      const status = error.statusCode ?? 500;
      if (status >= 400 && status < 500) {
        return sendProblem(reply, status, error.message || STATUS_CODES[status] || 'The request was not accepted.');
      }
      request.log.error({ reqId: request.id, method: request.method, url: request.url, err: error }, 'request failed');
      return sendProblem(
        reply,
        status >= 500 && status < 600 ? status : 500,
        `The server could not complete the request. If this persists, report it with request id ${request.id}.`,
      );
    });

    app.setNotFoundHandler((request, reply) => {
      const path = request.url.split('?', 1)[0]!;
      const allowed = ALLOW_CANDIDATES.filter((method) => method !== request.method && app.findRoute({ method, url: path }) !== null);
      if (allowed.length > 0) {
        reply.header('allow', [...allowed, 'OPTIONS'].join(', '));
        return sendProblem(reply, 405, `${request.method} is not allowed on ${truncate(path)}; allowed: ${allowed.join(', ')}.`);
      }
      return sendProblem(reply, 404, `There is nothing at ${truncate(path)}. The API lives under /api/v1; see /docs.`);
    });
  },
  { name: 'problem' },
);

function truncate(path: string): string {
  return path.length > 120 ? `${path.slice(0, 117)}...` : path;
}
