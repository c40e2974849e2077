/**
 * Running the service: open the database, bring the schema up to date (embedded engine) or refuse an
 * outdated one, load the demo data into an empty embedded database, listen, and shut down gracefully.
 */
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.ts';
import { describeConfig, type Config } from './config.ts';
import { assertSchemaCurrent, migrate, openDatabase, type Database } from './db/database.ts';
import { observeQuery } from './metrics/registry.ts';
import { loadDemo } from './demo/load-demo.ts';
import { createCardService } from './services/cards/index.ts';
import { EntryService } from './services/entries/index.ts';
import { galaxyBehind, GalaxyBackground } from './services/galaxy/background.ts';
import { connectionBudget, connectionLimits, descriptorLimit, limitConnections } from './plugins/connections.ts';
import { compilePendingSchemas } from './runtime/compile-later.ts';
import { createStorage } from './storage/index.ts';

/** How long in-flight requests may take to finish after SIGTERM/SIGINT. */
const SHUTDOWN_GRACE_MS = 10_000;
/** How often, while shutting down, connections whose last response has ended are closed. */
const IDLE_SWEEP_WHILE_CLOSING_MS = 100;
/** How long after listening the schemas not yet used start compiling in the background. */
const PENDING_SCHEMAS_DELAY_MS = 1000;

/** prepareDatabase opens the database and makes its schema current, as `serve` needs it. */
export async function prepareDatabase(config: Config): Promise<{ database: Database; migrated: string[] }> {
  const database = await openDatabase(config.database, { busyTimeoutMs: config.sqliteBusyTimeoutMs, onQuery: observeQuery });
  try {
    // The embedded default is self-managing; a shared server is migrated explicitly (`nonsense migrate`),
    // so that several instances never race to change its schema.
    const migrated = database.quirks.embedded ? await migrate(database) : [];
    await assertSchemaCurrent(database);
    return { database, migrated };
  } catch (error) {
    await database.close();
    throw error;
  }
}

/** isLoopback tells whether a listening address is reachable from this machine only. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** startServer serves the API until SIGTERM or SIGINT. */
export async function startServer(config: Config): Promise<FastifyInstance> {
  const { database, migrated } = await prepareDatabase(config);
  const storage = createStorage(database);
  const cards = createCardService(config);
  const entryService = new EntryService(storage, { cacheBytes: config.entryCacheBytes });
  const app = await buildApp({ config, storage, cards, entryService });
  // What is said before listening is logged after the line with the address, which comes first: on a
  // terminal it is the line a person looks for.
  const notes: Array<{ level: 'info' | 'warn'; details: object; message: string }> = [];
  notes.push({ level: 'info', details: { config: describeConfig(config) }, message: 'configuration' });
  if (config.baseUrl === null && !isLoopback(config.host)) {
    notes.push({
      level: 'warn',
      details: { host: config.host },
      message:
        'listening beyond this machine without BASE_URL: absolute links (share pages, OData, the API description) follow ' +
        "each request's Host header; set BASE_URL to the public address (docs/deployment.md)",
    });
  }
  if (migrated.length > 0) notes.push({ level: 'info', details: { migrated }, message: 'database schema migrated' });

  // Connections get a budget below the descriptor limit, so that the database, the threads and the
  // logs always have descriptors left (plugins/connections.ts).
  const descriptors = descriptorLimit();
  const limits = connectionLimits(config, descriptors.limit);
  limitConnections(app.server, limits);
  notes.push({
    level: 'info',
    details: { descriptorLimit: descriptors.known ? descriptors.limit : null, maxConnections: limits.max, maxConnectionsPerClient: limits.perClient },
    message: descriptors.known ? 'connection limits' : `connection limits (the descriptor limit could not be read; assumed ${descriptors.limit})`,
  });
  if (limits.max > connectionBudget(descriptors.limit)) {
    notes.push({
      level: 'warn',
      details: { descriptorLimit: descriptors.limit, maxConnections: limits.max },
      message:
        'MAX_CONNECTIONS leaves fewer than the reserved file descriptors for the database, threads and logs; ' +
        'raise the descriptor limit (ulimit -n, LimitNOFILE) or lower MAX_CONNECTIONS',
    });
  }

  if (config.demoData && database.quirks.embedded && (await storage.entries.isEmpty())) {
    notes.push({ level: 'info', details: await loadDemo(storage), message: 'empty database: demo data loaded' });
  }

  // The galaxy is laid out off the request path, in its own thread, started once listening.
  const galaxy = config.galaxy ? new GalaxyBackground(config, app.log, { needsWork: () => galaxyBehind(storage) }) : null;

  app.addHook('onClose', async () => {
    await galaxy?.stop();
    entryService.close();
    await cards.close();
    await database.close();
  });

  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down: finishing in-flight requests');
    const force = setTimeout(() => {
      app.log.error('in-flight requests did not finish in time; exiting');
      process.exit(1);
    }, SHUTDOWN_GRACE_MS);
    force.unref();
    // Closing drops the connections idle at that moment only: one whose response ends later would be
    // kept open for a next request that never comes, and hold the process until the grace is over.
    const dropIdle = setInterval(() => app.server.closeIdleConnections(), IDLE_SWEEP_WHILE_CLOSING_MS);
    dropIdle.unref();
    app.close().then(
      () => process.exit(0),
      (error: unknown) => {
        app.log.error({ err: error }, 'error during shutdown');
        process.exit(1);
      },
    );
  };
  // Handlers that stay: a signal often comes twice (Ctrl-C reaches every process of the terminal's
  // group, npm and node alike, and npm passes its own on to node; a manager may signal the process and
  // then its group), and without a handler the second would end the process before in-flight requests
  // finish.
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));

  try {
    await app.listen({ port: config.port, host: config.host, listenTextResolver: (address) => `listening on ${address}` });
  } finally {
    for (const { level, details, message } of notes) app.log[level](details, message);
  }
  galaxy?.start();
  // The entry cache fills in the background from here: nothing that grows with the entries runs before listening.
  entryService.warm();
  // Once listening, the server's errors are failed accepts (EMFILE with every descriptor taken, a
  // connection reset in the backlog): Node emits them on the server, and without a listener they
  // would end the process. The connections already open go on, and accepting resumes by itself.
  app.server.on('error', (error) => app.log.error({ err: error }, 'a connection could not be accepted'));
  // Request and response schemas compile on first use; the rest in the background (runtime/compile-later.ts),
  // from a second after listening: begun at once, the first of them (Ajv's meta-schema) kept the first
  // requests waiting.
  // Then the API document and its reference, which are made after the start too (plugins/docs.ts).
  setTimeout(() => {
    compilePendingSchemas()
      .catch((error: unknown) => app.log.error({ err: error }, 'a schema does not compile'))
      .then(() => app.prepareDocs())
      .catch((error: unknown) => app.log.error({ err: error }, 'the API document could not be made'));
  }, PENDING_SCHEMAS_DELAY_MS).unref();
  return app;
}
