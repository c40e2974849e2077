/**
 * Per-address rate limits (docs/decisions.md, "Rate limits"), with @fastify/rate-limit: one budget for every
 * public GET and HEAD (RATE_LIMIT_READ), one for share images (RATE_LIMIT_IMAGE), one for reports
 * (RATE_LIMIT_REPORT). Counters live in this process, or in Redis when REDIS_URL is set so that every
 * instance shares them. Each route spends the budget of its class (http/route-classes.ts), decided as
 * it is added: by the route a request matched (so `%2Epng` is charged like `.png`), never by its raw URL.
 */
import rateLimit, { normalizeIP } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import type { Redis } from 'ioredis';
import type { RateLimit } from '../config.ts';
import { rateLimited, watchCache } from '../metrics/registry.ts';
import { problemResponse } from '../schemas/api.ts';
import { HttpProblem } from '../http/problem.ts';
import { mayAnswerImage, namesImage, ROUTE_CLASSES, routeClassOf } from '../http/route-classes.ts';
import type { Admission } from './fast-lane.ts';
import { budgetedStore, COUNTER_BYTES, type BudgetedStore } from './rate-limit-store.ts';

type Limiter = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Spends one unit of the report budget of the request's address, throwing the 429 when it is used
     * up (undefined when off). Handlers call it once a report is known to be well-formed, so refused
     * reports cost nothing.
     */
    reportLimit: Limiter | undefined;
  }
}

const UNITS = [
  [3_600_000, 'hour'],
  [60_000, 'minute'],
  [1000, 'second'],
] as const;

/** describeWindow writes a rate-limit window as people say it: "10 minutes", "1 hour", "90 seconds". */
export function describeWindow(ms: number): string {
  const [size, unit] = UNITS.find(([size]) => ms % size === 0 && ms >= size) ?? [1, 'millisecond'];
  const count = ms / size;
  return `${count} ${unit}${count === 1 ? '' : 's'}`;
}

/**
 * imageOrRead is the limit of a route some of whose requests are share images (namesImage): the
 * image budget for those, else the read budget. A callback hook that returns at once when the chosen
 * budget is off (the hot path of an entry by UUID with RATE_LIMIT_READ=off pays no promise for it).
 */
function imageOrRead(image: Limiter | undefined, read: Limiter | undefined): onRequestHookHandler | undefined {
  if (image === undefined && read === undefined) return undefined;
  return (request, reply, done) => {
    const limit = namesImage(request) ? image : read;
    if (limit === undefined) done();
    else limit(request, reply).then(() => done(), done);
  };
}

/**
 * readAdmission spends the read budget for the fast lane (plugins/fast-lane.ts) from the in-process
 * store, and sets the same RateLimit-* headers as @fastify/rate-limit. It leaves to that plugin's hook
 * a request that would exceed the budget (the hook counts it and answers 429), and every request when
 * the counters are in Redis (an asynchronous store) or the client's address comes through a proxy
 * (Fastify works it out from TRUST_PROXY).
 */
function readAdmission(store: BudgetedStore | undefined, limit: NonNullable<RateLimit>, trustProxy: unknown): Admission {
  if (store === undefined || trustProxy !== false) return () => false;
  return (request, headers) => {
    const taken = store.take(`read:${normalizeIP(request.socket.remoteAddress ?? '')}`, limit.windowMs, limit.max);
    if (taken === null) return false;
    headers.push('ratelimit-limit', String(limit.max), 'ratelimit-remaining', String(Math.max(0, limit.max - taken.current)), 'ratelimit-reset', String(Math.ceil(taken.ttl / 1000)));
    return true;
  };
}

export default fp(
  async function rateLimitsPlugin(app: FastifyInstance) {
    const { rateLimitRead, rateLimitImage, rateLimitReport, redisUrl } = app.config;
    let redis: Redis | undefined;
    if (redisUrl !== null) {
      // Loaded only when used: the client is a large module, and most processes never need it.
      const { Redis } = await import('ioredis');
      // Bounded waits: during a Redis outage a request is delayed by at most commandTimeout, then served unlimited.
      redis = new Redis(redisUrl, { connectTimeout: 2000, maxRetriesPerRequest: 1, commandTimeout: 500 });
      redis.on('error', (error) => app.log.warn({ err: error }, 'Redis for rate limits is unavailable; requests are not limited meanwhile'));
      app.addHook('onClose', async () => {
        redis!.disconnect();
      });
    }

    // Without Redis the counters live here, within RATE_LIMIT_CACHE_BYTES.
    const local = redis === undefined ? budgetedStore(app.config.rateLimitCacheBytes, 3) : undefined;
    if (local !== undefined) {
      const unwatch = watchCache('rate_limits', () => ({ bytes: local.counters() * COUNTER_BYTES, items: local.counters() }));
      app.addHook('onClose', async () => {
        unwatch();
      });
    }

    await app.register(rateLimit, {
      global: false,
      redis,
      ...(local === undefined ? {} : { store: local.Store }),
      nameSpace: 'nonsense-rate-limit:',
      // A Redis outage must not take the service down with it.
      skipOnError: true,
      enableDraftSpec: true,
    });

    const limiter = (name: string, limit: RateLimit): Limiter | undefined =>
      limit === null
        ? undefined
        : (app.rateLimit({
            max: limit.max,
            timeWindow: limit.windowMs,
            keyGenerator: (request: FastifyRequest) => `${name}:${normalizeIP(request.ip)}`,
            // Names the budget's store (rate-limit-store.ts), which the fast lane's check below reads;
            // the plugin passes options it does not know on to the store.
            ...({ budget: name } as object),
            onExceeded: () => rateLimited.inc({ budget: name }),
            // The plugin's own `after` is the time left, not the window; the detail says both.
            errorResponseBuilder: (_request: FastifyRequest, context: { ttl: number }) =>
              new HttpProblem(
                429,
                `Too many requests from your address: at most ${limit.max} per ${describeWindow(limit.windowMs)}; ` +
                  `try again in ${Math.max(1, Math.ceil(context.ttl / 1000))} s.`,
              ),
          }) as Limiter);

    const read = limiter('read', rateLimitRead);
    const image = limiter('image', rateLimitImage);
    app.decorate('reportLimit', limiter('report', rateLimitReport));

    // The fast lane's routes are public reads: it spends the read budget itself when it can do so
    // synchronously, with the same key and headers as the hook; else Fastify's hook decides.
    if (rateLimitRead !== null) app.fastLane.admit(readAdmission(local?.budget('read'), rateLimitRead, app.config.trustProxy));

    app.addHook('onRoute', (route) => {
      // HEAD routes are added beside their GET (and `.png` HEADs render a card too), so they are charged alike.
      const methods = ([] as string[]).concat(route.method);
      const { budget } = ROUTE_CLASSES[routeClassOf(route)];
      if (!methods.some((method) => method === 'GET' || method === 'HEAD') || budget === null) return;
      // The API description says so whether or not the limits are on in this deployment.
      if (route.schema !== undefined && !route.schema.hide) {
        route.schema = { ...route.schema, response: { ...(route.schema.response as Record<string, unknown> | undefined), 429: problemResponse(429) } };
      }
      // Share images have their own budget.
      const limit: onRequestHookHandler | undefined =
        budget === 'image' ? image
        : mayAnswerImage(route) ? imageOrRead(image, read)
        : read;
      if (limit === undefined) return;
      const existing = route.onRequest === undefined ? [] : ([] as onRequestHookHandler[]).concat(route.onRequest as never);
      route.onRequest = [app.fastLane.mirrors('rateLimit', limit), ...existing];
    });
  },
  { name: 'rate-limits' },
);
