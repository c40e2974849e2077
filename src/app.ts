/**
 * The application as a Fastify instance. Only `server.ts` listens; tests build the same app with the
 * same options and inject requests.
 */
import { randomUUID } from 'node:crypto';
import cors from '@fastify/cors';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Config } from './config.ts';
import { adminAuth } from './plugins/admin-auth.ts';
import docs from './plugins/docs.ts';
import problem, { problemBody, PROBLEM_CONTENT_TYPE } from './plugins/problem.ts';
import rateLimits from './plugins/rate-limits.ts';
import adminCatalogRoutes from './routes/admin/catalog.ts';
import adminEntryRoutes from './routes/admin/entries.ts';
import moderationRoutes from './routes/admin/moderation.ts';
import adminSearchRoutes from './routes/admin/search.ts';
import catalogRoutes from './routes/api/catalog.ts';
import exportRoutes from './routes/api/export.ts';
import nonsenseRoutes from './routes/api/nonsense.ts';
import reportRoutes from './routes/api/report.ts';
import healthRoutes from './routes/health.ts';
import odataRoutes from './routes/odata/index.ts';
import siteRoutes from './routes/site/index.ts';
import sharePageRoutes from './routes/site/share-page.ts';
import type { Storage } from './storage/index.ts';

export interface AppOptions {
  config: Config;
  storage: Storage;
  /** Overrides the logger built from LOG_LEVEL (tests pass false). */
  logger?: boolean | object;
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/** The request id: the caller's X-Request-Id when it is sane (a proxy's), else a new UUID. */
function requestId(request: { headers: Record<string, string | string[] | undefined> }): string {
  const given = request.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

/** buildApp assembles plugins and routes; the caller owns `storage` and closes it after the app. */
export async function buildApp({ config, storage, logger }: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: logger ?? {
      level: config.logLevel,
      redact: ['req.headers.authorization', 'req.headers.cookie'],
    },
    // Fastify takes a hop count too, though its types omit it.
    trustProxy: config.trustProxy as boolean | string[],
    genReqId: requestId,
    // No child logger per request (it costs about a tenth of a trivial request's time); the few log
    // lines about a request carry its id explicitly.
    childLoggerFactory: (logger) => logger,
    // One access line per request (onResponse below) instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: 64 * 1024,
    routerOptions: { ignoreTrailingSlash: true, ignoreDuplicateSlashes: true, maxParamLength: 200 },
    // Malformed HTTP (bad request line, oversized headers) still gets problem+json.
    clientErrorHandler: (error, socket) => {
      if (!socket.writable) return;
      const status = (error as { code?: string }).code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
      const body = problemBody(status, status === 431 ? 'The request headers are too large.' : 'The request is not valid HTTP.');
      socket.end(
        `HTTP/1.1 ${status} ${status === 431 ? 'Request Header Fields Too Large' : 'Bad Request'}\r\n` +
          `Content-Type: ${PROBLEM_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.decorate('config', config);
  app.decorate('storage', storage);

  // Callback hooks: cheaper than async ones on the hot path.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  const log = app.log as FastifyBaseLogger & { isLevelEnabled?: (level: string) => boolean };
  if (log.isLevelEnabled?.('info')) {
    app.addHook('onResponse', (request, reply, done) => {
      app.log.info(
        { reqId: request.id, method: request.method, url: request.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime * 10) / 10 },
        'request',
      );
      done();
    });
  }

  await app.register(problem);
  await app.register(cors, {
    origin: '*',
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    exposedHeaders: ['ETag', 'X-Request-Id', 'Retry-After', 'Content-Disposition', 'DataServiceVersion', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'],
    maxAge: 86400,
  });
  // Before any route: it classifies routes into rate-limit budgets as they are added.
  await app.register(rateLimits);
  await app.register(docs);
  await app.register(healthRoutes);
  await app.register(sharePageRoutes);
  await app.register(siteRoutes);
  await app.register(
    async (api) => {
      await api.register(nonsenseRoutes);
      await api.register(catalogRoutes);
      await api.register(exportRoutes);
      await api.register(reportRoutes);
    },
    { prefix: '/api/v1' },
  );
  await app.register(
    async (admin) => {
      adminAuth(admin);
      await admin.register(adminEntryRoutes);
      await admin.register(adminCatalogRoutes);
      await admin.register(moderationRoutes);
      await admin.register(adminSearchRoutes);
    },
    { prefix: '/api/v1/admin' },
  );
  await app.register(odataRoutes, { prefix: '/odata/v2' });
  return app;
}
