/**
 * Errors of the OData interface, in the OData v2 error format (XML, or JSON when the request asked for
 * JSON), for the plugin's error and not-found handlers and for the app's handler of URLs the router
 * cannot take (broken percent-encoding), which answers before any plugin sees the request.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ODataRequestError } from '../../domain/odata/errors.ts';
import type { ODataFormat } from '../../domain/odata/query-options.ts';
import { JSON_ERROR_CONTENT_TYPE, jsonError, XML_ERROR_CONTENT_TYPE, xmlError } from '../../formats/odata/errors.ts';
import { classifyError } from '../../plugins/problem.ts';
import { responseFormatOf } from '../../formats/odata/negotiate.ts';

/** Where the OData interface is mounted. */
export const ODATA_PREFIX = '/odata/v2';

/** sendODataError answers in the OData error format, JSON when the request asked for JSON. */
export function sendODataError(request: FastifyRequest, reply: FastifyReply, status: number, message: string, format?: ODataFormat) {
  const json = responseFormatOf(request, format) === 'json';
  // A validator set before the failure named the representation that was not sent.
  reply.removeHeader('etag');
  // Set here too: a refusal by an app-wide hook (overload, rate limit) comes before the plugin's hook.
  return reply
    .code(status)
    .header('dataserviceversion', '2.0')
    .header('cache-control', 'no-store')
    .type(json ? JSON_ERROR_CONTENT_TYPE : XML_ERROR_CONTENT_TYPE)
    .send(json ? jsonError(message) : xmlError(message));
}

/**
 * odataErrorHandler renders any error in the OData format: the query language's own refusals as they
 * are, everything else as the service's one error classification (problem.ts) decides, so a
 * database outage is a 503 with Retry-After here too.
 */
export function odataErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  if (error instanceof ODataRequestError) return sendODataError(request, reply, error.status, error.message);
  const answer = classifyError(error, request);
  if (answer.headers) reply.headers(answer.headers);
  return sendODataError(request, reply, answer.status, answer.detail);
}
