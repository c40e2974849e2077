/**
 * `GET /metrics`: the process's figures in the Prometheus text format (see src/metrics/registry.ts),
 * and the per-request figures this plugin records: latency and count by method, route pattern and
 * status, and the requests in flight. Routes are labelled by their pattern (`/api/v1/nonsense/:id`),
 * never the raw URL, so the number of series stays bounded whatever clients send; unknown paths share
 * the label `unmatched`, and a share image asked through another route (http/route-classes.ts,
 * requestClass) gets its route's label with `.png`. With METRICS_TOKEN set the endpoint needs `Authorization: Bearer <token>`.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { registry, renderMetrics, requestMetrics, watchDatabase } from '../metrics/registry.ts';
import type { RouteSeries } from '../metrics/requests.ts';
import { HttpProblem } from '../http/problem.ts';
import { requestClass } from '../http/route-classes.ts';

export const METRICS_PATH = '/metrics';

// What the 'close' listener needs, kept on the response itself so that one shared listener serves
// every request (no closure per request).
const kStart = Symbol('metricsStart');
const kRoute = Symbol('metricsRoute');
type TimedResponse = ServerResponse & { [kStart]: number; [kRoute]: RouteSeries };

/** The series of each route pattern, by pattern; unknown paths share `unmatched`. */
const routes = new Map<string, RouteSeries>();

/** routeSeries is the series of a route pattern (Fastify's, as `/api/v1/nonsense/:id`) for one method. */
export function routeSeries(method: string, label: string): RouteSeries {
  let found = routes.get(label);
  if (found === undefined) {
    found = requestMetrics.route(method, label);
    routes.set(label, found);
  }
  return found;
}

/** routeOf is the series of the route that answers; the share image gets its own, as it costs far more. */
function routeOf(request: FastifyRequest): RouteSeries {
  const options = request.routeOptions;
  const route = options.url;
  if (route === undefined) return routeSeries(request.method, 'unmatched');
  if (options.config.routeClass !== 'share-image' && requestClass(request, options) === 'share-image') return routeSeries(request.method, `${route}.png`);
  return routeSeries(request.method, route);
}

// 'close' on the response fires exactly once, whether the response finished or the client went
// away mid-stream (when Fastify's onResponse does not run), so the in-flight count cannot drift.
function onClose(this: TimedResponse): void {
  requestMetrics.inFlight--;
  this[kRoute].series(this.req.method ?? 'GET', this.statusCode).observe((performance.now() - this[kStart]) / 1000);
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

export default fp(
  async function metricsPlugin(app: FastifyInstance) {
    app.addHook('onRequest', app.fastLane.mirrors('metrics', (request, reply, done) => {
      const res = reply.raw as TimedResponse;
      res[kStart] = performance.now();
      res[kRoute] = routeOf(request);
      requestMetrics.inFlight++;
      res.on('close', onClose);
      done();
    }));

    const stats = app.storage.database.stats?.bind(app.storage.database);
    if (stats) {
      const unwatch = watchDatabase(stats);
      app.addHook('onClose', async () => {
        unwatch();
      });
    }

    const expected = app.config.metricsToken === null ? null : sha256(app.config.metricsToken);
    const authorize = async (request: FastifyRequest, reply: FastifyReply) => {
      reply.header('cache-control', 'no-store');
      if (expected === null) return;
      const match = /^Bearer[ ]+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
      // Comparing digests keeps the comparison constant-time whatever the length of the guess.
      if (match === null || !timingSafeEqual(sha256(match[1]!), expected)) {
        throw new HttpProblem(401, 'The metrics need the token set in METRICS_TOKEN: send "Authorization: Bearer <token>".', {}, {
          'www-authenticate': 'Bearer realm="nonsense-metrics"',
        });
      }
    };

    app.get(METRICS_PATH, { schema: { hide: true }, onRequest: authorize }, async (_request, reply) => {
      const body = await renderMetrics();
      return reply.type(registry.contentType).send(body);
    });
  },
  { name: 'metrics' },
);
