/**
 * The application as a Fastify instance. Only `server.ts` listens; tests build the same app with the
 * same options and inject requests.
 */
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import cors from '@fastify/cors';
import helmet from '@fastify/helmet';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Config } from './config.ts';
import { adminAuth } from './plugins/admin-auth.ts';
import docs from './plugins/docs.ts';
import metrics from './plugins/metrics.ts';
import overload from './plugins/overload.ts';
import problem, { problemBody, PROBLEM_CONTENT_TYPE, sendProblem } from './plugins/problem.ts';
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
    // A client gets REQUEST_TIMEOUT to send its whole request (slow-loris defence); a connection with
    // no traffic either way for two minutes (a download nobody reads any more) is dropped, which also
    // ends the database walk behind it.
    requestTimeout: config.requestTimeoutMs ?? 0,
    connectionTimeout: 120_000,
    // Node checks request timeouts only this often (its default is 30 s, longer than the timeout).
    http: { connectionsCheckingInterval: 1000 },
    routerOptions: { ignoreTrailingSlash: true, ignoreDuplicateSlashes: true, maxParamLength: 200 },
    // A URL the router cannot take (broken percent-encoding, a path segment over maxParamLength)
    // never reaches the hooks or the error handler; it still gets problem+json, its id and CORS.
    frameworkErrors: (error, request, reply) => {
      const tooLong = error.code === 'FST_ERR_MAX_PARAM_LENGTH';
      reply.header('x-request-id', request.id).header('access-control-allow-origin', '*');
      return sendProblem(reply, tooLong ? 414 : 400, tooLong ? 'A path segment is too long.' : 'The URL is not valid: it has broken percent-encoding.');
    },
    // Malformed HTTP (bad request line, oversized headers) still gets problem+json.
    clientErrorHandler: (error, socket) => {
      if (!socket.writable) return;
      const code = (error as { code?: string }).code;
      const [status, detail] =
        code === 'HPE_HEADER_OVERFLOW' ? [431, 'The request headers are too large.']
        : code === 'ERR_HTTP_REQUEST_TIMEOUT' ? [408, 'The request was not received in time.']
        : [400, 'The request is not valid HTTP.'];
      const body = problemBody(status, detail);
      socket.end(
        `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
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
  // Before every other hook, so that every request is counted and timed, refused ones included.
  await app.register(metrics);
  await app.register(cors, {
    origin: '*',
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    exposedHeaders: ['ETag', 'X-Request-Id', 'Retry-After', 'Content-Disposition', 'DataServiceVersion', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'],
    maxAge: 86400,
  });
  // Pages set their own Content-Security-Policy (the site, /docs), so helmet sets none. The API is
  // public and cross-origin (images and emojis embedded by other sites), hence cross-origin CORP.
  // HSTS belongs to whoever terminates TLS, and its includeSubDomains would reach beyond this service.
  // Headers for browsers long gone (IE's download options and XSS auditor, Flash policies, DNS
  // prefetch) are left out: every header costs on each response, and they protect nothing today.
  await app.register(helmet, {
    contentSecurityPolicy: false,
    crossOriginResourcePolicy: { policy: 'cross-origin' },
    strictTransportSecurity: false,
    xDnsPrefetchControl: false,
    xDownloadOptions: false,
    xPermittedCrossDomainPolicies: false,
    xXssProtection: false,
    originAgentCluster: false,
  });
  // After CORS and helmet, so a refusal still carries their headers (a browser can read the 503).
  await app.register(overload);
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
