/**
 * The fast lane: the hottest reads (a random entry, an entry by UUID) answered by a plain node:http
 * handler in front of Fastify, when their answer is ready at once: in memory, or from a point read
 * of the embedded database (services/entries).
 *
 * Fastify's request and reply objects, its hook runner and its header handling cost about as much as
 * the whole answer of these two routes when the entry cache holds it (`npm run bench:ab` shows it). The
 * lane answers such a request with the same bytes and the same side effects as the Fastify route:
 * the same status, body and headers (the request id, CORS and security headers of headers.ts, the
 * route's own), one line in the access log, the same latency series in /metrics, and the same
 * rate-limit and overload decisions. Everything else goes to Fastify untouched: other paths and
 * methods, query strings, trailing slashes, errors (an unknown UUID is Fastify's 404), an entry
 * service behind the revision, a request that an admission (overload, an exhausted rate limit) does
 * not let in, a service shutting down. test/routes/fast-lane.test.ts holds the lane to that.
 *
 * A route enters the lane from its plugin (`app.fastLane.get(...)`), beside its Fastify declaration,
 * which stays the one the API description and `inject` see.
 *
 * The lane cannot drift from Fastify unnoticed: every hook Fastify would run for a lane route must be
 * one the lane mirrors (MIRRORED), marked so where it is added (`mirrors`), and the route may have no
 * options but the ones in ROUTE_OPTIONS; otherwise the app refuses to start and says which hook or
 * option the lane does not mirror (`attach`).
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { FastifyInstance, FastifyServerFactory, RouteOptions } from 'fastify';
import type { RouteSeries } from '../metrics/requests.ts';
import { COMMON_HEADERS, requestId } from './headers.ts';
import { etagMatches } from '../http/cache.ts';
import { routeSeries } from './metrics.ts';

/**
 * What the lane does in place of the hooks Fastify runs for its routes, one invariant each: a hook on
 * a lane route must be marked with the invariant it keeps (`FastLane.mirrors`). The route's own
 * answer (status, body, its headers, its 304) is the route handler's, given to the lane beside it.
 */
export const MIRRORED = {
  metrics: 'the latency series of the route in /metrics (plugins/metrics.ts): observed by serve()',
  commonHeaders: 'the request id, CORS and security headers (plugins/headers.ts): COMMON_HEADERS in every answer',
  overload: 'the refusal under sustained pressure (plugins/overload.ts): its admission leaves the request to Fastify',
  rateLimit: 'the read budget and its RateLimit headers (plugins/rate-limits.ts): its admission spends it',
  accessLog: 'one access-log line a request (plugins/access-log.ts): logTo',
} as const;

export type Invariant = keyof typeof MIRRORED;

/**
 * The options a lane route may be declared with: none of them changes what a lane request gets.
 * Fastify fills in `logLevel` and `attachValidation` for every route; the lane logs only its access
 * line, and its paths are the valid ones.
 */
const ROUTE_OPTIONS = new Set(['method', 'url', 'path', 'prefix', 'routePath', 'handler', 'schema', 'config', 'exposeHeadRoute', 'prefixTrailingSlash', 'logLevel', 'attachValidation']);
/**
 * The keys Fastify and its plugins put in a lane route's `config`, with the values the lane keeps:
 * the lane answers as the `api` class does (http/route-classes.ts: the read budget, problem+json,
 * which Fastify writes for every error the lane leaves to it).
 */
const ROUTE_CONFIG: Record<string, (value: unknown) => boolean> = { url: () => true, method: () => true, routeClass: (value) => value === 'api' };
/** The hooks Fastify runs for a request of a route (fastify/lib/hooks.js, `lifecycleHooks`). */
const REQUEST_HOOKS = ['onTimeout', 'onRequest', 'preParsing', 'preValidation', 'preSerialization', 'preHandler', 'onSend', 'onResponse', 'onError', 'onRequestAbort'] as const;

/** What a lane route answers: a status, its own headers (a flat list of lower-case names and values) and a body. */
export interface LaneAnswer {
  readonly status: 200 | 304;
  /** The route's own headers; the same array for the same headers (the lane keeps its full list per array). */
  readonly headers: readonly string[];
  readonly body: string | Buffer;
  /** The body's length in bytes, when the route knows it without a pass over the body. */
  readonly bytes?: number | undefined;
}

/** A lane route answers a GET of its path from memory, or returns undefined to leave it to Fastify. */
export type LaneHandler = (path: string, request: IncomingMessage) => LaneAnswer | undefined;

/**
 * An admission decides, once the answer is known, whether the lane may send it: true lets it in
 * (after adding any headers of its own to `headers`), false leaves the request to Fastify, whose own
 * hook then decides as it always does. An admission with a side effect (spending a rate-limit unit)
 * has it only when it returns true.
 */
export type Admission = (request: IncomingMessage, headers: string[]) => boolean;

/** Writes the access-log line of an answered request (plugins/access-log.ts). */
export type AccessLogWriter = (id: string, method: string, url: string, status: number, ms: number) => void;

interface LaneRoute {
  readonly handler: LaneHandler;
  readonly series: RouteSeries;
  /** The Fastify route pattern it answers for. */
  readonly label: string;
}

/**
 * hooksOf reads the request hooks `instance` gives the routes it declares. Fastify keeps them under a
 * symbol of its own ('fastify.hooks'); without it (another Fastify) the check cannot be made, and
 * says so instead of passing.
 */
function hooksOf(instance: FastifyInstance): Partial<Record<string, unknown[]>> | undefined {
  const symbol = Object.getOwnPropertySymbols(instance).find((s) => s.description === 'fastify.hooks');
  const hooks = symbol === undefined ? undefined : (instance as unknown as Record<symbol, unknown>)[symbol];
  return typeof hooks === 'object' && hooks !== null && Array.isArray((hooks as { onRequest?: unknown }).onRequest) ? (hooks as Partial<Record<string, unknown[]>>) : undefined;
}

/** describeHook names a hook for the refusal: its name, or the start of its code. */
function describeHook(hook: unknown): string {
  if (typeof hook !== 'function') return String(hook);
  return hook.name !== '' ? `\`${hook.name}\`` : `\`${String(hook).replace(/\s+/g, ' ').slice(0, 80)}\``;
}

/**
 * The whole header list of an answer, made once per list of the route's own headers: a slot for the
 * request id, the common headers, the route's, and a slot for the body's length (left out for a 304,
 * which has none). A request copies it and fills in the slots.
 */
const headLists = new WeakMap<readonly string[], { withLength: readonly string[]; without: readonly string[] }>();
function headList(own: readonly string[], withLength: boolean): readonly string[] {
  let lists = headLists.get(own);
  if (lists === undefined) {
    const without = ['x-request-id', '', ...COMMON_HEADERS, ...own];
    lists = { withLength: [...without, 'content-length', ''], without };
    headLists.set(own, lists);
  }
  return withLength ? lists.withLength : lists.without;
}

/**
 * laneNotModified tells whether a lane request's `If-None-Match` names `etag`, by the comparison of
 * every other route (http/cache.ts), whatever its cache directives say. It reads the raw header list,
 * as requestId does: Node builds a request's `headers` object on first use, which the lane otherwise
 * never needs. Field lines sent more than once form one list, so any of them may match.
 */
export function laneNotModified(request: IncomingMessage, etag: string): boolean {
  const raw = request.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 13 && name.toLowerCase() === 'if-none-match' && etagMatches(raw[i + 1]!, etag)) return true;
  }
  return false;
}

export class FastLane {
  /** Routes by exact path. */
  private readonly exact = new Map<string, LaneRoute>();
  /** Routes of a fixed prefix and one path segment of a fixed length (`/api/v1/nonsense/<uuid>`). */
  private readonly segments: { prefix: string; length: number; route: LaneRoute }[] = [];
  private readonly admissions: Admission[] = [];
  private accessLog: AccessLogWriter | undefined;
  /** Open from the app's start (onReady) until it begins to close (preClose): Fastify answers outside. */
  private open = false;
  /** The hooks marked with the invariant the lane keeps in their place. */
  private readonly mirrored = new WeakMap<object, Invariant>();
  /** Fastify's GET routes as declared, with the instance that declared them (`attach`). */
  private readonly declared: { instance: FastifyInstance; route: RouteOptions }[] = [];

  /**
   * get adds a GET route: `path` exactly, or with `segment` the path `path` followed by one segment of
   * `segment` characters. `label` is the route pattern of its metrics series, as Fastify names it.
   */
  get(path: string, label: string, handler: LaneHandler, segment?: number): void {
    const route = { handler, series: routeSeries('GET', label), label };
    if (segment === undefined) this.exact.set(path, route);
    else this.segments.push({ prefix: path, length: path.length + segment, route });
  }

  /** admit adds an admission every lane request must pass (in the order added). */
  admit(admission: Admission): void {
    this.admissions.push(admission);
  }

  /** logTo sets the access log's writer; without one, the lane writes no access log (LOG_LEVEL above info). */
  logTo(writer: AccessLogWriter | undefined): void {
    this.accessLog = writer;
  }

  setOpen(open: boolean): void {
    this.open = open;
  }

  /** mirrors marks `hook` as one whose work the lane does itself, keeping `invariant`; it returns the hook. */
  mirrors<H extends object>(invariant: Invariant, hook: H): H {
    this.mirrored.set(hook, invariant);
    return hook;
  }

  /**
   * attach opens the lane when `app` is ready and closes it when the app begins to close. Before it
   * opens, it checks every lane route's Fastify declaration, and the app refuses to start with an
   * error naming what the lane does not mirror. Called before any route is declared.
   */
  attach(app: FastifyInstance): void {
    const declared = this.declared;
    // Fastify calls onRoute with the instance that declares the route, whose hooks the route gets.
    app.addHook('onRoute', function (this: FastifyInstance, route) {
      if (([] as string[]).concat(route.method).includes('GET')) declared.push({ instance: this, route });
    });
    app.addHook('onReady', (done) => {
      const unmirrored = this.unmirrored();
      if (unmirrored.length > 0) {
        done(
          new Error(
            `The fast lane does not mirror what Fastify does for its routes, so it would answer differently: ${unmirrored.join('; ')}. ` +
              'Mirror it in plugins/fast-lane.ts (and mark the hook with app.fastLane.mirrors), or take the route out of the lane.',
          ),
        );
        return;
      }
      this.setOpen(true);
      done();
    });
    // From here on Fastify answers every request, with 503 and `Connection: close` while it closes.
    app.addHook('preClose', (done) => {
      this.setOpen(false);
      done();
    });
  }

  /**
   * unmirrored lists what Fastify would do for a lane route and the lane does not: a request hook not
   * marked with `mirrors` (the declaring instance's hooks and the route's own, as Fastify joins them
   * when it gets ready), a route option or a `config` key the lane does not know.
   */
  private unmirrored(): string[] {
    const found: string[] = [];
    const labels = new Set([...this.exact.values(), ...this.segments.map((s) => s.route)].map((route) => route.label));
    for (const { instance, route } of this.declared) {
      if (!labels.has(route.url)) continue;
      labels.delete(route.url);
      const at = `GET ${route.url}`;
      const hooks = hooksOf(instance);
      if (hooks === undefined) {
        found.push(`${at}: the hooks of the instance that declares it cannot be read in this Fastify version`);
        continue;
      }
      for (const name of REQUEST_HOOKS) {
        const own = (route as unknown as Record<string, unknown>)[name];
        for (const hook of [...(hooks[name] ?? []), ...(own === undefined ? [] : ([] as unknown[]).concat(own))]) {
          if (!this.mirrored.has(hook as object)) found.push(`${at}: the ${name} hook ${describeHook(hook)}`);
        }
      }
      for (const option of Object.keys(route)) {
        if (!ROUTE_OPTIONS.has(option) && !(REQUEST_HOOKS as readonly string[]).includes(option) && (route as unknown as Record<string, unknown>)[option] !== undefined) found.push(`${at}: the route option \`${option}\``);
      }
      for (const [key, value] of Object.entries(route.config ?? {})) {
        if (!Object.hasOwn(ROUTE_CONFIG, key) || !ROUTE_CONFIG[key]!(value)) found.push(`${at}: the route config \`${key}\` (${JSON.stringify(value)})`);
      }
    }
    for (const label of labels) found.push(`${label}: no Fastify GET route declares it`);
    return found;
  }

  /**
   * serverFactory is Fastify's `serverFactory`: the HTTP server Fastify would create itself, with the
   * same settings, whose requests go through the lane first.
   */
  readonly serverFactory: FastifyServerFactory = (fastifyHandler, fastifyOptions) => {
    // Fastify's options, with its defaults filled in; its types leave them open.
    const options = fastifyOptions as { http?: http.ServerOptions; keepAliveTimeout: number; requestTimeout: number; connectionTimeout: number; maxRequestsPerSocket?: number | null };
    const server = http.createServer(options.http ?? {}, (request, response) => {
      if (!this.serve(request, response)) fastifyHandler(request, response);
    });
    // What Fastify sets on the server it creates itself (fastify/lib/server.js).
    server.keepAliveTimeout = options.keepAliveTimeout;
    server.requestTimeout = options.requestTimeout;
    if (options.connectionTimeout > 0) server.setTimeout(options.connectionTimeout);
    if (typeof options.maxRequestsPerSocket === 'number' && options.maxRequestsPerSocket > 0) server.maxRequestsPerSocket = options.maxRequestsPerSocket;
    return server;
  };

  /** serve answers a request in the lane and tells whether it did; false leaves it untouched for Fastify. */
  serve(request: IncomingMessage, response: ServerResponse): boolean {
    if (!this.open || request.method !== 'GET') return false;
    const url = request.url!;
    const route = this.route(url);
    if (route === undefined) return false;
    const started = performance.now();
    const answer = route.handler(url, request);
    if (answer === undefined) return false;

    const id = requestId(request);
    // As Fastify sends a 304: no body and no Content-Length.
    const withBody = answer.status !== 304;
    const headers = headList(answer.headers, withBody).slice();
    headers[1] = id;
    const body = answer.body;
    if (withBody) headers[headers.length - 1] = String(answer.bytes ?? (typeof body === 'string' ? Buffer.byteLength(body) : body.length));
    for (let i = 0; i < this.admissions.length; i++) if (!this.admissions[i]!(request, headers)) return false;
    response.writeHead(answer.status, headers);
    if (withBody) response.end(body);
    else response.end();

    const ms = performance.now() - started;
    route.series.series('GET', answer.status).observe(ms / 1000);
    this.accessLog?.(id, 'GET', url, answer.status, Math.round(ms * 10) / 10);
    return true;
  }

  private route(url: string): LaneRoute | undefined {
    const exact = this.exact.get(url);
    if (exact !== undefined) return exact;
    for (let i = 0; i < this.segments.length; i++) {
      const candidate = this.segments[i]!;
      if (url.length === candidate.length && url.startsWith(candidate.prefix) && url.indexOf('/', candidate.prefix.length) === -1) return candidate.route;
    }
    return undefined;
  }
}
