/**
 * Per-address rate limits (contract section 12), with @fastify/rate-limit: one budget for every
 * public GET (RATE_LIMIT_READ), one for share images (RATE_LIMIT_IMAGE), one for reports
 * (RATE_LIMIT_REPORT). Counters live in this process, or in Redis when REDIS_URL is set so that every
 * instance shares them. Routes are classified here, as they are added, not one by one.
 */
import rateLimit, { normalizeIP } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import { Redis } from 'ioredis';
import type { RateLimit } from '../config.ts';
import { rateLimited } from '../metrics/registry.ts';
import { HttpProblem } from './problem.ts';

type Limiter = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

declare module 'fastify' {
  interface FastifyInstance {
    /** Route option for POST /api/v1/nonsense/report: `{ onRequest: app.reportLimit }` (undefined when off). */
    reportLimit: Limiter | undefined;
  }
}

/** Public GETs: the interface, OData and the share pages; not health, docs or the admin API. */
function isPublicRead(url: string): boolean {
  return (url.startsWith('/api/v1/') && !url.startsWith('/api/v1/admin')) || url.startsWith('/odata/') || url.startsWith('/nonsense/');
}

const isShareImage = (request: FastifyRequest) => request.url.split('?', 1)[0]!.toLowerCase().endsWith('.png');

export default fp(
  async function rateLimitsPlugin(app: FastifyInstance) {
    const { rateLimitRead, rateLimitImage, rateLimitReport, redisUrl } = app.config;
    let redis: Redis | undefined;
    if (redisUrl !== null) {
      // Bounded waits: during a Redis outage a request is delayed by at most commandTimeout, then served unlimited.
      redis = new Redis(redisUrl, { connectTimeout: 2000, maxRetriesPerRequest: 1, commandTimeout: 500 });
      redis.on('error', (error) => app.log.warn({ err: error }, 'Redis for rate limits is unavailable; requests are not limited meanwhile'));
      app.addHook('onClose', async () => {
        redis!.disconnect();
      });
    }

    await app.register(rateLimit, {
      global: false,
      redis,
      nameSpace: 'nonsense-rate-limit:',
      // A Redis outage must not take the service down with it.
      skipOnError: true,
      enableDraftSpec: true,
      errorResponseBuilder: (_request, context) =>
        new HttpProblem(
          429,
          `Too many requests from your address: at most ${context.max} per ${context.after}. ` +
            `Try again in ${Math.max(1, Math.ceil(context.ttl / 1000))} s.`,
        ),
    });

    const limiter = (name: string, limit: RateLimit): Limiter | undefined =>
      limit === null
        ? undefined
        : (app.rateLimit({
            max: limit.max,
            timeWindow: limit.windowMs,
            keyGenerator: (request: FastifyRequest) => `${name}:${normalizeIP(request.ip)}`,
            onExceeded: () => rateLimited.inc({ budget: name }),
          }) as Limiter);

    const read = limiter('read', rateLimitRead);
    const image = limiter('image', rateLimitImage);
    app.decorate('reportLimit', limiter('report', rateLimitReport));

    app.addHook('onRoute', (route) => {
      const methods = ([] as string[]).concat(route.method);
      if (!methods.includes('GET') || !isPublicRead(route.url)) return;
      // The by-UUID route also serves the share image, which has its own budget.
      const limit: Limiter | undefined =
        route.url === '/api/v1/nonsense/:id'
          ? async (request, reply) => (isShareImage(request) ? image?.(request, reply) : read?.(request, reply))
          : read;
      if (limit === undefined) return;
      const existing = route.onRequest === undefined ? [] : ([] as onRequestAsyncHookHandler[]).concat(route.onRequest as never);
      route.onRequest = [limit as onRequestAsyncHookHandler, ...existing];
    });
  },
  { name: 'rate-limits' },
);
