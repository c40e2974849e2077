/**
 * `GET /metrics`: the process's figures in the Prometheus text format (see src/metrics/registry.ts),
 * and the per-request figures this plugin records: latency and count by method, route pattern and
 * status, and the requests in flight. Routes are labelled by their pattern (`/api/v1/nonsense/:id`),
 * never the raw URL, so the number of series stays bounded whatever clients send; unknown paths share
 * the label `unmatched`. With METRICS_TOKEN set the endpoint needs `Authorization: Bearer <token>`.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Counter, Histogram } from 'prom-client';
import { httpDuration, httpInFlight, httpRequests, registry, watchDatabase } from '../metrics/registry.ts';
import { HttpProblem } from './problem.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** performance.now() when the request arrived, for the latency histogram. */
    metricsStart: number;
  }
}

export const METRICS_PATH = '/metrics';

type Series = { duration: ReturnType<Histogram<'method' | 'route' | 'status'>['labels']>; count: ReturnType<Counter<'method' | 'route' | 'status'>['labels']> };

// Looking up a labelled child hashes its labels; caching the pair per label set keeps the cost per
// request to one Map lookup. The set is bounded: routes × methods × statuses.
const series = new Map<string, Series>();

function seriesOf(method: string, route: string, status: number): Series {
  const key = `${method} ${status} ${route}`;
  let found = series.get(key);
  if (found === undefined) {
    const labels = { method, route, status: String(status) };
    found = { duration: httpDuration.labels(labels), count: httpRequests.labels(labels) };
    series.set(key, found);
  }
  return found;
}

/** routeLabel is the pattern of the route that answered; the share image gets its own, as it costs far more. */
function routeLabel(request: FastifyRequest): string {
  const route = request.routeOptions.url;
  if (route === undefined) return 'unmatched';
  if (route === '/api/v1/nonsense/:id' && /\.png$/i.test((request.params as { id?: string }).id ?? '')) return '/api/v1/nonsense/:id.png';
  return route;
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

export default fp(
  async function metricsPlugin(app: FastifyInstance) {
    app.decorateRequest('metricsStart', 0);

    // 'close' on the response fires exactly once, whether the response finished or the client went
    // away mid-stream (when Fastify's onResponse does not run), so the in-flight gauge cannot drift.
    app.addHook('onRequest', (request, reply, done) => {
      request.metricsStart = performance.now();
      httpInFlight.inc();
      reply.raw.once('close', () => {
        httpInFlight.dec();
        const seconds = (performance.now() - request.metricsStart) / 1000;
        const { duration, count } = seriesOf(request.method, routeLabel(request), reply.statusCode);
        duration.observe(seconds);
        count.inc();
      });
      done();
    });

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
      const body = await registry.metrics();
      return reply.type(registry.contentType).send(body);
    });
  },
  { name: 'metrics' },
);
