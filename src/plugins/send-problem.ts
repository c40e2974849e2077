/**
 * An error in the format its path answers in: problem+json, or, for a browser on one of the site's
 * paths (content negotiation on Accept), the site's error page with the same status and headers.
 */
import type { FastifyReply } from 'fastify';
import { sendProblemJson } from '../http/problem-json.ts';
import { isSitePath, prefersHtml, sendErrorPage } from '../web/error-page.ts';

/** sendProblem writes an error response: problem+json, or the site's error page for a browser on a site path. */
export function sendProblem(reply: FastifyReply, status: number, detail: string, extensions?: Record<string, unknown>) {
  const { request } = reply;
  if (isSitePath(request.url.split('?', 1)[0]!)) {
    // The answer depends on Accept here, so caches must key on it.
    const vary = reply.getHeader('vary');
    reply.header('vary', vary ? `${String(vary)}, Accept` : 'Accept');
    if (prefersHtml(request.headers.accept)) return sendErrorPage(reply, status, detail);
  }
  return sendProblemJson(reply, status, detail, extensions);
}
