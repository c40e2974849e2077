/**
 * The process's Prometheus metrics, in one registry. Plain module state, no Fastify: the share-image
 * cache, the rate limits and the database layer count here directly, and the `/metrics` route
 * (plugins/metrics.ts) renders the registry. One registry per process, like the card cache: several
 * apps in one process (tests) add to the same counters, so tests compare before and after.
 */
import client from 'prom-client';

export const registry = new client.Registry();

// The standard process figures (CPU, resident memory, heap, event loop lag, open handles, GC).
client.collectDefaultMetrics({ register: registry });

/** Request latency in seconds by method, route pattern and status; its `_count` is the request count. */
export const httpDuration = new client.Histogram({
  name: 'http_request_duration_seconds',
  help: 'Time from receiving a request to finishing its response, by method, route pattern and status.',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

export const httpRequests = new client.Counter({
  name: 'http_requests_total',
  help: 'Requests answered, by method, route pattern and status.',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [registry],
});

export const httpInFlight = new client.Gauge({
  name: 'http_requests_in_flight',
  help: 'Requests received and not yet answered.',
  registers: [registry],
});

export const rateLimited = new client.Counter({
  name: 'nonsense_rate_limited_total',
  help: 'Requests refused with 429, by rate-limit budget (read, image, report).',
  labelNames: ['budget'] as const,
  registers: [registry],
});

export const overloaded = new client.Counter({
  name: 'nonsense_overload_rejected_total',
  help: 'Requests refused with 503 because the process was overloaded, by the threshold that tripped.',
  labelNames: ['reason'] as const,
  registers: [registry],
});

export const databaseUnavailable = new client.Counter({
  name: 'nonsense_database_unavailable_total',
  help: 'Requests answered 503 because the database could not be reached or was busy.',
  registers: [registry],
});

export const dbQueryDuration = new client.Histogram({
  name: 'nonsense_db_query_duration_seconds',
  help: 'Database query time as seen by the service (including waiting for a pooled connection), by outcome.',
  labelNames: ['outcome'] as const,
  buckets: [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 2],
  registers: [registry],
});

export const shareImageCache = new client.Counter({
  name: 'nonsense_share_image_cache_total',
  help: 'Share image lookups: hit (cached), joined (a render already running), miss (rendered).',
  labelNames: ['result'] as const,
  registers: [registry],
});

export const shareImageRender = new client.Histogram({
  name: 'nonsense_share_image_render_seconds',
  help: 'Time to render one share image (not counting the wait for a render slot).',
  buckets: [0.025, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2],
  registers: [registry],
});

/** What a database can say about itself at scrape time (see Database.stats). */
export interface DatabaseStats {
  engine: string;
  /** Pooled connections (PostgreSQL). */
  pool?: { total: number; idle: number; waiting: number };
  /** Size of the database file and its write-ahead log (SQLite). */
  files?: { database: number; wal: number };
}

/** Sources of database figures: one per open app, removed when it closes. */
const databaseSources = new Set<() => DatabaseStats | undefined>();

/** watchDatabase adds a source of database figures; the returned function removes it. */
export function watchDatabase(source: () => DatabaseStats | undefined): () => void {
  databaseSources.add(source);
  return () => databaseSources.delete(source);
}

function collectDatabase(): DatabaseStats[] {
  const all: DatabaseStats[] = [];
  for (const source of databaseSources) {
    try {
      const stats = source();
      if (stats) all.push(stats);
    } catch {
      // A database closing during a scrape has no figures; the scrape must not fail for it.
    }
  }
  return all;
}

new client.Gauge({
  name: 'nonsense_db_pool_connections',
  help: 'PostgreSQL pool connections by state: total (open), idle, waiting (requests queued for a connection).',
  labelNames: ['state'] as const,
  registers: [registry],
  collect() {
    this.reset();
    for (const { pool } of collectDatabase()) {
      if (!pool) continue;
      this.inc({ state: 'total' }, pool.total);
      this.inc({ state: 'idle' }, pool.idle);
      this.inc({ state: 'waiting' }, pool.waiting);
    }
  },
});

new client.Gauge({
  name: 'nonsense_db_file_bytes',
  help: 'Size of the embedded database: the main file and its write-ahead log (a growing log means checkpoints cannot finish).',
  labelNames: ['file'] as const,
  registers: [registry],
  collect() {
    this.reset();
    for (const { files } of collectDatabase()) {
      if (!files) continue;
      this.inc({ file: 'database' }, files.database);
      this.inc({ file: 'wal' }, files.wal);
    }
  },
});

/** observeQuery records one database query (milliseconds, as the query builder reports them). */
export function observeQuery(ms: number, failed: boolean): void {
  (failed ? queryError : queryOk).observe(ms / 1000);
}
const queryOk = dbQueryDuration.labels('ok');
const queryError = dbQueryDuration.labels('error');
