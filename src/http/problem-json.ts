/** The problem+json document (RFC 9457): every error of the API and of operations leaves as one. */
import { STATUS_CODES } from 'node:http';
import type { FastifyReply } from 'fastify';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** problemBody builds the problem+json document for a status. */
export function problemBody(status: number, detail: string, extensions: Record<string, unknown> = {}): string {
  return JSON.stringify({ type: 'about:blank', title: STATUS_CODES[status] ?? 'Error', status, detail, ...extensions });
}

/** sendProblemJson answers with the problem+json document. */
export function sendProblemJson(reply: FastifyReply, status: number, detail: string, extensions?: Record<string, unknown>): FastifyReply {
  return reply.code(status).type(PROBLEM_CONTENT_TYPE).send(problemBody(status, detail, extensions));
}
