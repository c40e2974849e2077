/**
 * The frame every page of the site shares: head, header with the site's navigation, footer; and the
 * headers every page is sent with, above all a strict Content-Security-Policy.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { badgeLetter } from '../domain/display-text.ts';
import { EMOJI_NAME_SOURCE } from '../domain/emojis.ts';
import { contentTag, notModified } from '../http/cache.ts';
import { assetUrl, moduleImports } from './assets.ts';
import { html, type SafeHtml } from './html.ts';

/**
 * Scripts, styles, fonts, images and requests from the service itself only; no inline script or
 * style at all (there is none: behaviour lives in /static/*.js, looks in /static/site.css), no
 * plugins, no framing, forms only to the service.
 */
export const SITE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

export type Section = 'random' | 'search' | 'galaxy' | 'admin' | null;

export interface PageOptions {
  title: string;
  appName: string;
  /** The navigation item to mark as the current page. */
  current: Section;
  main: SafeHtml;
  /** The page's script modules (static files); what they import is preloaded beside them. */
  scripts?: readonly string[];
  description?: string;
  /** data-* attributes of <body>: settings for the scripts (never markup). */
  data?: Readonly<Record<string, string>>;
}

/** page renders a complete document. */
export function page({ title, appName, current, main, scripts = [], description, data = {} }: PageOptions): string {
  const navItem = (section: Section, href: string, label: string) =>
    html`<li><a href="${href}"${current === section ? html` aria-current="page"` : ''}>${label}</a></li>`;
  // Every page states the emoji name grammar for its scripts, so that it is written once (domain/emojis.ts).
  const attributes = Object.entries({ ...data, 'emoji-name': EMOJI_NAME_SOURCE }).map(([key, value]) => html` data-${key}="${value}"`);
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${title === appName ? appName : `${title} · ${appName}`}</title>
${description ? html`<meta name="description" content="${description}">` : ''}
<link rel="icon" href="${assetUrl('icon.svg')}" type="image/svg+xml">
<link rel="stylesheet" href="${assetUrl('site.css')}">
${scripts.map((file) => html`<script type="module" src="${assetUrl(file)}"></script>\n`)}${[...new Set(scripts.flatMap(moduleImports))].map((file) => html`<link rel="modulepreload" href="${assetUrl(file)}">\n`)}</head>
<body${attributes}>
<a class="skip-link" href="#main">Skip to content</a>
<header class="site-header">
<div class="bar">
<a class="brand" href="/"><span class="badge" aria-hidden="true">${badgeLetter(appName)}</span><span class="brand-name">${appName}</span></a>
<nav aria-label="Site">
<ul>
${navItem('random', '/', 'Random')}
${navItem('search', '/search', 'Search')}
${navItem('galaxy', '/galaxy', 'Galaxy')}
</ul>
</nav>
</div>
</header>
<main id="main" tabindex="-1">
${main}
</main>
<footer class="site-footer">
<div class="bar">
<p>${appName}</p>
<ul>
<li><a href="/docs">API</a></li>
<li><a href="/admin"${current === 'admin' ? html` aria-current="page"` : ''}>Moderation</a></li>
</ul>
</div>
</footer>
</body>
</html>
`.value;
}

/**
 * sendPage answers an HTML page with the site's security headers. Pages that are not `no-store` get a
 * strong ETag of their bytes, so a revisit costs a 304 when nothing changed.
 */
export function sendPage(request: FastifyRequest, reply: FastifyReply, body: string, cacheControl = 'no-cache'): FastifyReply {
  pageHeaders(reply);
  if (cacheControl === 'no-store') reply.header('cache-control', cacheControl);
  else if (notModified(request, reply, contentTag(body), cacheControl)) return reply;
  return reply.type('text/html; charset=utf-8').send(body);
}

/** pageHeaders sets the headers every page of the site carries. */
export function pageHeaders(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', SITE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'same-origin')
    .header('x-frame-options', 'DENY');
}
