/**
 * Errors as pages, for people: a browser that asks for one of the site's paths (a page, a share page,
 * an unknown address outside the API; the classes answered with pages in http/route-classes.ts) gets
 * the error as a page of the site, with the same status and headers. Everything else, and every API
 * path whatever it asks for, keeps problem+json.
 */
import { STATUS_CODES } from 'node:http';
import type { FastifyReply } from 'fastify';
import { html } from './html.ts';
import { page, pageHeaders } from './layout.ts';

interface MediaRange {
  type: string;
  subtype: string;
  q: number;
}

function parseAccept(accept: string): MediaRange[] {
  const ranges: MediaRange[] = [];
  // A bound on the work a hostile header can cause: browsers send fewer than ten ranges.
  for (const part of accept.split(',', 32)) {
    const [range = '', ...parameters] = part.split(';');
    const [type, subtype] = range.trim().toLowerCase().split('/');
    if (!type || !subtype) continue;
    let q = 1;
    for (const parameter of parameters) {
      const [key, value] = parameter.split('=').map((s) => s.trim());
      if (key === 'q' && value !== undefined && /^(0(\.\d{0,3})?|1(\.0{0,3})?)$/.test(value)) q = Number(value);
    }
    ranges.push({ type, subtype, q });
  }
  return ranges;
}

/** The quality the most specific matching range gives `type/subtype` (RFC 9110, 12.5.1); 0 when none matches. */
function qualityOf(ranges: readonly MediaRange[], type: string, subtype: string): number {
  let best = -1;
  let q = 0;
  for (const range of ranges) {
    const specificity = range.type === type && range.subtype === subtype ? 2 : range.type === type && range.subtype === '*' ? 1 : range.type === '*' && range.subtype === '*' ? 0 : -1;
    if (specificity > best) {
      best = specificity;
      q = range.q;
    }
  }
  return q;
}

/**
 * prefersHtml tells whether an Accept header ranks text/html above JSON. A browser's navigation
 * (`text/html,...,*\/*;q=0.8`) does; `*\/*` alone (curl, fetch) and no header do not.
 */
export function prefersHtml(accept: string | undefined): boolean {
  if (accept === undefined || accept === '') return false;
  const ranges = parseAccept(accept.slice(0, 1024));
  const htmlQuality = qualityOf(ranges, 'text', 'html');
  return htmlQuality > 0 && htmlQuality > Math.max(qualityOf(ranges, 'application', 'problem+json'), qualityOf(ranges, 'application', 'json'));
}

/** What the page says above the detail, by status. */
function headingOf(status: number): string {
  if (status === 404) return 'Nothing here';
  if (status === 405) return 'Not possible here';
  if (status === 429) return 'Too many requests';
  if (status === 503) return 'Not available right now';
  if (status >= 500) return 'Something went wrong';
  return 'That did not work';
}

/** errorPage renders the page for an error: the status, what it means, the detail, and ways on. */
export function errorPage(status: number, detail: string, appName: string): string {
  const main = html`<section class="error-page" aria-labelledby="error-title">
<p class="error-status">${status} · ${STATUS_CODES[status] ?? 'Error'}</p>
<h1 id="error-title">${headingOf(status)}</h1>
<p class="error-detail">${detail}</p>
<ul class="actions">
<li><a class="button button-primary" href="/">Read a random entry</a></li>
<li><a class="button" href="/search">Search entries</a></li>
</ul>
</section>`;
  return page({ title: headingOf(status), appName, current: null, main });
}

/** sendErrorPage answers with the error page, the site's page headers, and no caching. */
export function sendErrorPage(reply: FastifyReply, status: number, detail: string): FastifyReply {
  const body = errorPage(status, detail, reply.server.config.appName);
  return pageHeaders(reply).code(status).header('cache-control', 'no-store').type('text/html; charset=utf-8').send(body);
}
