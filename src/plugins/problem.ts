/**
 * Errors, in one place: every error is classified once (classifyError) and leaves with a detail a
 * person can act on, in the format of its route's class (send-problem.ts: problem+json, or the site's
 * page for a browser). Unknown paths are 404, known paths with another method 405 with `Allow`. A 5xx
 * is logged with its request id and its details stay inside the process.
 */
import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { STATUS_CODES } from 'node:http';
import { isDatabaseUnavailable } from '../db/unavailable.ts';
import { formatBytes } from '../domain/bytes.ts';
import { HttpProblem, methodNotAllowed, shortPath } from '../http/problem.ts';
import { databaseUnavailable } from '../metrics/registry.ts';
import { Problem } from '../schemas/api.ts';
import { describeValidation } from '../schemas/validation-wording.ts';
import { PoolBusy } from '../services/worker-pool/index.ts';
import { allowedMethods } from './allowed-methods.ts';
import { sendProblem } from './send-problem.ts';

/** Seconds a client is asked to wait when the database is unreachable or busy. */
export const DATABASE_RETRY_AFTER_S = 5;

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
      const allowed = allowedMethods(app, request.method, path);
      if (allowed.length > 0) {
        const problem = methodNotAllowed(request.method, path, allowed);
        reply.headers(problem.headers);
        return sendProblem(reply, 405, problem.detail);
      }
      return sendProblem(reply, 404, `There is nothing at ${shortPath(path)}. The API lives under /api/v1; see /docs.`);
    });
  },
  { name: 'problem' },
);
