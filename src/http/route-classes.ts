/**
 * Route classes: what kind of answer a route gives, in one table read by the rate limits, the error
 * handler and the metrics instead of patterns of URLs. Each route group names its class once
 * (`setRouteClass` in routes/api/index.ts, routes/admin/index.ts, routes/site/index.ts, ...), and
 * `assignRouteClass`, the app's first `onRoute` hook, writes it into each route's `config.routeClass`
 * before any other hook reads it. A request that matches no route (404, 405) and a route outside every
 * group get the class of their path's prefix (`classOfPath`), decided here too.
 */
import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';

/** How a class's errors are answered. */
export type ErrorFormat =
  /** application/problem+json, whatever the client asks for. */
  | 'problem'
  /** OData v2's own error format (routes/odata/errors.ts). */
  | 'odata'
  /** problem+json, or the site's error page for a browser that prefers HTML (plugins/send-problem.ts). */
  | 'page';

export interface RouteClassTraits {
  /** The per-address rate limit its GET and HEAD routes spend (plugins/rate-limits.ts); null: none. */
  budget: 'read' | 'image' | null;
  /** How its errors are answered. */
  errors: ErrorFormat;
}

/** The classes. Budgets: docs/decisions.md, "Rate limits"; error formats: docs/web.md. */
export const ROUTE_CLASSES = {
  /** The public JSON API under /api/v1. */
  api: { budget: 'read', errors: 'problem' },
  /** Share images: far dearer than a read, with their own budget. */
  'share-image': { budget: 'image', errors: 'problem' },
  /** The admin API: bearer tokens; limiting it per address would let one client lock moderators out. */
  admin: { budget: null, errors: 'problem' },
  /** The OData v2 interface. */
  odata: { budget: 'read', errors: 'odata' },
  /** Pages of the site, share pages, and unknown paths outside the API. */
  site: { budget: 'read', errors: 'page' },
  /** The site's fixed files, served from memory. */
  static: { budget: null, errors: 'page' },
  /** The API description and its reference page, fixed documents served from memory. */
  docs: { budget: null, errors: 'problem' },
  /** Health checks and metrics: probes must never be refused. */
  operations: { budget: null, errors: 'problem' },
} as const satisfies Record<string, RouteClassTraits>;

export type RouteClass = keyof typeof ROUTE_CLASSES;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's class (http/route-classes.ts), set by its group. */
    routeClass?: RouteClass;
  }
}

/**
 * The classes of paths by prefix, first match wins: for requests that match no route, and routes
 * registered outside a group. A prefix matches a whole path segment (`/api` matches `/api/x`, not `/apiary`).
 */
const PREFIXES: readonly (readonly [string, RouteClass])[] = [
  ['/api/v1/admin', 'admin'],
  ['/api', 'api'],
  ['/odata/v2', 'odata'],
  ['/odata', 'api'],
  ['/openapi.json', 'docs'],
  ['/docs', 'docs'],
  ['/metrics', 'operations'],
  ['/healthz', 'operations'],
  ['/readyz', 'operations'],
  ['/static', 'static'],
];

/** classOfPath is the class of a path (no query) by its prefix; `site` when none matches. */
export function classOfPath(path: string): RouteClass {
  for (const [prefix, name] of PREFIXES) {
    if (path.startsWith(prefix) && (path.length === prefix.length || path[prefix.length] === '/')) return name;
  }
  // The icon is asked for at /favicon.ico by name, beside the site's own links to /static/.
  return path.startsWith('/favicon') ? 'static' : 'site';
}

/** classOfUrl is the class of a raw request URL, query included. */
export function classOfUrl(url: string): RouteClass {
  const query = url.indexOf('?');
  return classOfPath(query === -1 ? url : url.slice(0, query));
}

const kGroupClass = Symbol('routeClass');
type Classified = FastifyInstance & { [kGroupClass]?: RouteClass };

/**
 * setRouteClass gives the routes a group registers (on `group` and the plugins it registers) the
 * class `name`, unless a route names its own in `config.routeClass`. Call it at the start of the
 * group's plugin, which must be encapsulated (no fastify-plugin), so the class stays in the group.
 */
export function setRouteClass(group: FastifyInstance, name: RouteClass): void {
  (group as Classified)[kGroupClass] = name;
}

/** assignRouteClass is the app's first `onRoute` hook: it settles `config.routeClass` of each route. */
export function assignRouteClass(this: FastifyInstance, route: RouteOptions): void {
  const config = (route.config ??= {}) as { routeClass?: RouteClass };
  config.routeClass ??= (this as Classified)[kGroupClass] ?? classOfPath(route.url);
}

/** routeClassOf is the class of a route as added (in an `onRoute` hook after assignRouteClass). */
export function routeClassOf(route: RouteOptions): RouteClass {
  return (route.config as { routeClass?: RouteClass } | undefined)?.routeClass ?? classOfPath(route.url);
}

/**
 * The by-UUID route also receives `<uuid>.PNG` (the share image's route takes `.png` only): that
 * request is answered, charged and counted as a share image would be.
 */
export const BY_UUID_ROUTE = '/api/v1/nonsense/:id';
const PNG = /\.png$/i;

/** mayAnswerImage tells whether a route's requests may be in the share-image class (namesImage decides per request). */
export function mayAnswerImage(route: RouteOptions): boolean {
  return route.url === BY_UUID_ROUTE;
}

/** namesImage tells whether a request to a route that mayAnswerImage names a share image. */
export function namesImage(request: FastifyRequest): boolean {
  return PNG.test((request.params as { id?: string } | undefined)?.id ?? '');
}

/**
 * requestClass is the class a request is answered in: its route's, or its path's when it matched none.
 * `options` is `request.routeOptions` where the caller has it already (the getter builds an object).
 */
export function requestClass(request: FastifyRequest, options = request.routeOptions): RouteClass {
  const routeClass = options.config?.routeClass;
  if (routeClass === undefined) return classOfUrl(request.url);
  if (options.url === BY_UUID_ROUTE && namesImage(request)) return 'share-image';
  return routeClass;
}
