/**
 * An error in the format of its request's class (http/route-classes.ts): problem+json, or, on a class
 * answered with pages (the site), the site's error page for a browser that prefers HTML (content
 * negotiation on Accept), with the same status and headers.
 */
import type { FastifyReply } from 'fastify';
import { sendProblemJson } from '../http/problem-json.ts';
import { requestClass, ROUTE_CLASSES } from '../http/route-classes.ts';
import { prefersHtml, sendErrorPage } from '../web/error-page.ts';

/** sendProblem writes an error response: problem+json, or the site's error page for a browser on the site. */
export function sendProblem(reply: FastifyReply, status: number, detail: string, extensions?: Record<string, unknown>) {
  const { request } = reply;
  if (ROUTE_CLASSES[requestClass(request)].errors === 'page') {
    // The answer depends on Accept here, so caches must key on it.
    const vary = reply.getHeader('vary');
    reply.header('vary', vary ? `${String(vary)}, Accept` : 'Accept');
    if (prefersHtml(request.headers.accept)) return sendErrorPage(reply, status, detail);
  }
  return sendProblemJson(reply, status, detail, extensions);
}
