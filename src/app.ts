/**
 * The application as a Fastify instance. Only `server.ts` listens; tests build the same app with the
 * same options and inject requests.
 */
import { STATUS_CODES } from 'node:http';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import type { Config } from './config.ts';
import accessLog, { logDestination } from './plugins/access-log.ts';
import docs from './plugins/docs.ts';
import fairShare from './plugins/fair-share.ts';
import { FastLane } from './plugins/fast-lane.ts';
import head from './plugins/head.ts';
import headers, { requestId, setCommonHeaders } from './plugins/headers.ts';
import metrics from './plugins/metrics.ts';
import overload from './plugins/overload.ts';
import problem from './plugins/problem.ts';
import { problemBody, PROBLEM_CONTENT_TYPE } from './http/problem-json.ts';
import { sendProblem } from './plugins/send-problem.ts';
import rateLimits from './plugins/rate-limits.ts';
import { buildSerializer } from './schemas/serializer.ts';
import { compileRequestSchema } from './schemas/validator.ts';
import { assignRouteClass, classOfUrl } from './http/route-classes.ts';
import adminRoutes from './routes/admin/index.ts';
import apiRoutes from './routes/api/index.ts';
import healthRoutes from './routes/health.ts';
import { ODATA_PREFIX, sendODataError } from './routes/odata/errors.ts';
import odataRoutes from './routes/odata/index.ts';
import siteRoutes from './routes/site/index.ts';
import sharePageRoutes from './routes/site/share-page.ts';
import { createCardService, type CardService } from './services/cards/index.ts';
import { EntryService } from './services/entries/index.ts';
import { ReadWorkers } from './services/read-workers/index.ts';
import type { Storage } from './storage/index.ts';

export interface AppOptions {
  config: Config;
  storage: Storage;
  /** The share card service (render workers, card cache); the caller closes it after the app. Without it the app builds one and closes it itself. */
  cards?: CardService;
  /** The entry service over `storage`; the caller closes it after the app. Without it the app builds one and closes it itself. */
  entryService?: EntryService;
  /**
   * Whether exports from an SQLite file are read and written in a worker thread (services/read-workers);
   * default true. Tests of the event-loop path (PostgreSQL's) on SQLite turn it off.
   */
  readWorkers?: boolean;
  /** Overrides the logger built from LOG_LEVEL (tests pass false). */
  logger?: boolean | object;
}

/** buildApp assembles plugins and routes; the caller owns `storage` and closes it after the app. */
export async function buildApp({ config, storage, cards, entryService, logger, readWorkers = true }: AppOptions): Promise<FastifyInstance> {
  const destination = logger === undefined && config.logLevel !== 'silent' ? logDestination() : undefined;
  // The hottest reads skip Fastify when their answer is ready (plugins/fast-lane.ts).
  const lane = new FastLane();
  const app = Fastify({
    serverFactory: lane.serverFactory,
    logger: logger ?? {
      level: config.logLevel,
      redact: ['req.headers.authorization', 'req.headers.cookie'],
      ...(destination === undefined ? {} : { stream: destination }),
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
    // Response schemas compile on their first answer (schemas/serializer.ts).
    schemaController: { compilersFactory: { buildSerializer } },
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
      setCommonHeaders(reply, request.id);
      const [status, detail] = tooLong ? [414, 'A path segment is too long.'] : [400, 'The URL is not valid: it has broken percent-encoding.'];
      // Under /odata/v2 in the OData error format, as every answer there.
      void (classOfUrl(request.url) === 'odata' ? sendODataError(request, reply, status, detail) : sendProblem(reply, status, detail));
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
  // Every request schema validates with the service's own Ajv settings (schemas/validator.ts).
  app.setValidatorCompiler(compileRequestSchema);

  // Before any other onRoute hook: the rate limits, the error handler and the metrics read each
  // route's class (http/route-classes.ts).
  app.addHook('onRoute', assignRouteClass);
  app.decorate('config', config);
  app.decorate('storage', storage);
  app.decorate('fastLane', lane);
  // Opens with the app, once it has checked that it mirrors every hook of its routes.
  lane.attach(app);
  if (cards === undefined) {
    const own = createCardService(config);
    app.decorate('cards', own);
    app.addHook('onClose', () => own.close());
  } else app.decorate('cards', cards);
  if (entryService === undefined) {
    const own = new EntryService(storage, { cacheBytes: config.entryCacheBytes });
    app.decorate('entryService', own);
    app.addHook('onClose', async () => own.close());
  } else app.decorate('entryService', entryService);
  const exports = readWorkers ? ReadWorkers.forDatabase(config.database, config.readWorkerQueue, config.readWorkerThreads) : null;
  app.decorate('readWorkers', exports);
  if (exports !== null) {
    app.addHook('onClose', () => {
      app.storage.pageWarming.use(undefined);
      return exports.close();
    });
    // Random picks the cache cannot answer are read and prepared ahead, in the workers.
    app.entryService.drawsAheadWith((draws, variables) => exports.draws(draws, variables));
    // A write reads the pages it touches in a worker first: on the event loop they may be cold.
    app.storage.pageWarming.use((keys) => exports.warm(keys));
  }

  // Before every route: it takes over the body handling of the HEAD route Fastify adds beside each GET.
  await app.register(head);
  await app.register(accessLog, { destination });
  await app.register(problem);
  // Before every other hook, so that every request is counted and timed, refused ones included.
  await app.register(metrics);
  // The request id, CORS and security headers, and the answer to preflights.
  await app.register(headers);
  // After the headers, so a refusal still carries them (a browser can read the 503).
  await app.register(overload);
  // Before any route: it classifies routes into rate-limit budgets as they are added.
  await app.register(rateLimits);
  // After the rate limits: heavy routes are limited per address, their work shared by address.
  await app.register(fairShare);
  await app.register(docs);
  await app.register(healthRoutes);
  await app.register(sharePageRoutes);
  await app.register(siteRoutes);
  await app.register(apiRoutes, { prefix: '/api/v1' });
  await app.register(adminRoutes, { prefix: '/api/v1/admin' });
  await app.register(odataRoutes, { prefix: ODATA_PREFIX });
  return app;
}
