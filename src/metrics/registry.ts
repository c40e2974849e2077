/**
 * The process's Prometheus metrics, in one registry. Plain module state, no Fastify: the share-image
 * service, the rate limits and the database layer count here directly, and the `/metrics` route
 * (plugins/metrics.ts) answers `renderMetrics()`. One registry per process: several apps in one process
 * (tests) add to the same counters, so tests compare before and after; gauges sum over the sources
 * that are open.
 */
import client from 'prom-client';
import { RequestMetrics } from './requests.ts';

export const registry = new client.Registry();

// The standard process figures (CPU, resident memory, heap, event loop lag, open handles, GC).
client.collectDefaultMetrics({ register: registry });

/** The per-request figures (latency, count, in flight), observed by plugins/metrics.ts. */
export const requestMetrics = new RequestMetrics(registry);

/**
 * renderMetrics is the text `/metrics` answers: the registry's families, then the request series,
 * which render their own text (metrics/requests.ts).
 */
export async function renderMetrics(): Promise<string> {
  const rest = await registry.metrics();
  const requests = requestMetrics.text();
  return requests === '' ? rest : `${rest}\n${requests}\n`;
}

/**
 * Sources of one kind of figure read at scrape time: one per open app (or service), each removed
 * when it closes. A source that fails (its app closing during a scrape) is left out of that scrape.
 */
class Sources<T> {
  private readonly all = new Set<() => T>();

  /** watch adds a source; the returned function removes it. */
  readonly watch = (source: () => T): (() => void) => {
    this.all.add(source);
    return () => this.all.delete(source);
  };

  /** figures reads every source now. */
  figures(): T[] {
    const read: T[] = [];
    for (const source of this.all) {
      try {
        read.push(source());
      } catch {
        // Closing while scraped: no figures from it this time; the scrape must not fail for it.
      }
    }
    return read;
  }
}

/** sum adds one figure over every source. */
function sum<T>(sources: Sources<T>, figure: (stats: T) => number): number {
  let total = 0;
  for (const stats of sources.figures()) total += figure(stats);
  return total;
}

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

export const connectionsRefused = new client.Counter({
  name: 'nonsense_connections_refused_total',
  help: 'Connections closed as soon as they were accepted, by the budget that was full: total (MAX_CONNECTIONS) or per_client (MAX_CONNECTIONS_PER_CLIENT).',
  labelNames: ['budget'] as const,
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

export const shareImageRefused = new client.Counter({
  name: 'nonsense_share_image_refused_total',
  help: 'Share images refused with 503 because every render thread was busy and the wait queue full.',
  registers: [registry],
});

export const readWorkersRefused = new client.Counter({
  name: 'nonsense_read_worker_refused_total',
  help: 'Exports, searches and OData reads refused with 503 because READ_WORKER_QUEUE tasks were already waiting for the read workers.',
  registers: [registry],
});

export const heavyRefused = new client.Counter({
  name: 'nonsense_fair_share_refused_total',
  help: 'Requests refused with 429 because their address had HEAVY_REQUESTS_PER_CLIENT heavy requests running (reason "concurrency") or had spent its ODATA_TIME_BUDGET (reason "odata_time").',
  labelNames: ['reason'] as const,
  registers: [registry],
});

export const shareImageCancelled = new client.Counter({
  name: 'nonsense_share_image_cancelled_total',
  help: 'Share image renders dropped or stopped because every client waiting for them had gone.',
  registers: [registry],
});

/** What a card service can say about itself at scrape time. */
export interface CardStats {
  cacheBytes: number;
  cacheCards: number;
  threads: number;
  running: number;
  waiting: number;
}

const cardSources = new Sources<CardStats>();

/** watchCards adds a source of card figures (one per card service); the returned function removes it. */
export const watchCards = cardSources.watch;

function cardGauge(name: string, help: string, figure: (stats: CardStats) => number): void {
  new client.Gauge({
    name,
    help,
    registers: [registry],
    collect() {
      this.set(sum(cardSources, figure));
    },
  });
}

cardGauge('nonsense_share_image_cache_bytes', 'Bytes of share images held in the in-memory card cache (at most CARD_CACHE_BYTES).', (s) => s.cacheBytes);
cardGauge('nonsense_share_image_cache_cards', 'Share images held in the in-memory card cache.', (s) => s.cacheCards);
cardGauge('nonsense_share_image_renders_running', 'Share images being drawn in render threads right now.', (s) => s.running);
cardGauge('nonsense_share_image_renders_waiting', 'Share images waiting for a render thread (at most CARD_RENDER_QUEUE).', (s) => s.waiting);

/** Sources of the read workers' queue length (one per app with read workers). */
const readWorkerSources = new Sources<number>();

/** watchReadWorkers adds a source of the tasks queued at the read workers; the returned function removes it. */
export const watchReadWorkers = readWorkerSources.watch;

new client.Gauge({
  name: 'nonsense_read_worker_tasks',
  help: 'Tasks (export pages, search pages, admin searches, OData reads) waiting for the read workers or running in them; new requests are refused while READ_WORKER_QUEUE wait.',
  registers: [registry],
  collect() {
    this.set(sum(readWorkerSources, (queued) => queued));
  },
});

/** What an in-memory cache holds, at scrape time. */
export interface CacheStats {
  bytes: number;
  items: number;
}

/** Sources of cache figures by cache name (entry_snapshot, rate_limits, galaxy), one per app. */
const cacheSources = new Map<string, Sources<CacheStats>>();

/** watchCache adds a source of figures of the cache `name`; the returned function removes it. */
export function watchCache(name: string, source: () => CacheStats): () => void {
  let sources = cacheSources.get(name);
  if (sources === undefined) {
    sources = new Sources();
    cacheSources.set(name, sources);
  }
  return sources.watch(source);
}

function cacheGauge(name: string, help: string, figure: (stats: CacheStats) => number): void {
  new client.Gauge({
    name,
    help,
    labelNames: ['cache'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [cache, sources] of cacheSources) this.set({ cache }, sum(sources, figure));
    },
  });
}

cacheGauge(
  'nonsense_cache_bytes',
  'Bytes held by an in-memory cache, each within its budget: entry_snapshot (the entries held ready, ENTRY_CACHE_BYTES), rate_limits (RATE_LIMIT_CACHE_BYTES), galaxy (GALAXY_CACHE_BYTES).',
  (s) => s.bytes,
);
cacheGauge('nonsense_cache_items', 'Items held by an in-memory cache: entries, rate-limit keys, or stars.', (s) => s.items);

/** Random picks served by an entry service, by where the entry came from. */
export interface RandomPicks {
  /** Held by the entry cache: picked from it when it holds every entry, or the drawn entry was held. */
  cache: number;
  /** Read and prepared ahead of the request, off the event loop (a read worker, or one query a batch). */
  drawn_ahead: number;
  /** Read by the request itself: no batch drawn ahead came for it (refused, failed, or taken by the requests before it). */
  on_request: number;
}

/** Sources of random-pick counts: one per open app, removed when it closes. */
const randomPickSources = new Sources<RandomPicks>();

/** watchRandomPicks adds a source of random-pick counts; the returned function removes it. */
export const watchRandomPicks = randomPickSources.watch;

new client.Counter({
  name: 'nonsense_random_picks_total',
  help: 'Random entries served, by source: cache (held in memory), drawn_ahead (read off the event loop before the request), on_request (read by the request itself, as no batch drawn ahead came for it).',
  labelNames: ['source'] as const,
  registers: [registry],
  collect() {
    this.reset();
    for (const key of ['cache', 'drawn_ahead', 'on_request'] as const) this.inc({ source: key }, sum(randomPickSources, (picks) => picks[key]));
  },
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
const databaseSources = new Sources<DatabaseStats | undefined>();

/** watchDatabase adds a source of database figures; the returned function removes it. */
export const watchDatabase = databaseSources.watch;

function collectDatabase(): DatabaseStats[] {
  return databaseSources.figures().filter((stats) => stats !== undefined);
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
