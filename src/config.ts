/**
 * Configuration: one table of options keyed by environment variable, each with its default, parser
 * and description. `loadConfig` validates all of them at once and throws a `ConfigError` that names
 * every bad variable, so a misconfigured start stops with one clear message.
 */
import os from 'node:os';
import path from 'node:path';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/** A rate limit: at most `max` requests per `windowMs`, or `null` when switched off. */
export type RateLimit = { max: number; windowMs: number } | null;

/** A budget of time: at most `ms` per `windowMs`, or `null` when switched off. */
export type TimeBudget = { ms: number; windowMs: number } | null;

export type DatabaseTarget =
  /** `createFolder`: the file is in the default folder (./data), which is made when missing; no other is. */
  | { engine: 'sqlite'; file: string; createFolder?: true }
  | { engine: 'postgres'; url: string };

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly database: DatabaseTarget;
  /** Absolute base URL without a trailing slash, or null to derive links from each request. */
  readonly baseUrl: string | null;
  readonly appName: string;
  readonly redisUrl: string | null;
  readonly logLevel: LogLevel;
  /** Passed to Fastify's `trustProxy`: false, true, a hop count, or a list of addresses/CIDRs. */
  readonly trustProxy: boolean | number | string[];
  readonly rateLimitRead: RateLimit;
  readonly rateLimitImage: RateLimit;
  readonly rateLimitReport: RateLimit;
  /** Load the bundled demo data on first start of an empty embedded database. */
  readonly demoData: boolean;
  /** Bearer token that `/metrics` requires, or null to leave it open. */
  readonly metricsToken: string | null;
  /** Answer 503 while the mean event-loop delay exceeds this (ms); null: never. */
  readonly overloadMaxEventLoopDelayMs: number | null;
  /** Answer 503 while the event-loop utilisation (0 to 1) exceeds this; null: never. */
  readonly overloadMaxEventLoopUtilization: number | null;
  /** Time a client has to send a whole request (headers and body), in ms; null: no limit. */
  readonly requestTimeoutMs: number | null;
  /** Open connections at most; `auto`: what the descriptor limit leaves after a reserve (plugins/connections.ts). */
  readonly maxConnections: number | 'auto';
  /** Open connections of one TCP peer address at most; `auto`: 64, or none with TRUST_PROXY; null: none. */
  readonly maxConnectionsPerClient: number | 'auto' | null;
  /** SQLite: how long a write waits for a lock held by another process (an import), in ms. */
  readonly sqliteBusyTimeoutMs: number;
  /** Byte budget of the in-memory share card cache. */
  readonly cardCacheBytes: number;
  /** Worker threads that draw share cards. */
  readonly cardRenderThreads: number;
  /** Share cards that may wait for a render thread before more are refused with 503. */
  readonly cardRenderQueue: number;
  /** Wall time one share card may take to draw, in ms; then its render thread is replaced and the card refused with 503. */
  readonly cardRenderTimeoutMs: number;
  /** Tasks that may wait for the read workers (an SQLite file) before new exports, searches and OData reads are refused with 503. */
  readonly readWorkerQueue: number;
  /** Worker threads that read an SQLite file for exports, searches and OData. */
  readonly readWorkerThreads: number;
  /** Heavy requests (exports, searches, OData, the galaxy, the API reference) one address may have running at once; null: no limit. */
  readonly heavyRequestsPerClient: number | null;
  /** Database time the OData reads of one address may take per window; null: no limit. */
  readonly odataTimeBudget: TimeBudget;
  /** Byte budget of the entries held as prepared JSON (random and by-UUID, services/entries); 0: none. */
  readonly entryCacheBytes: number;
  /** Byte budget of the galaxy's stars held ready to serve; 0: every request reads the database. */
  readonly galaxyCacheBytes: number;
  /** Lay out the galaxy in a background thread of the server. */
  readonly galaxy: boolean;
  /** Threads a full layout of the galaxy places its entries on (the galaxy thread and helpers). */
  readonly galaxyThreads: number;
  /** Byte budget of the in-process rate-limit counters (without Redis). */
  readonly rateLimitCacheBytes: number;
  /** Days the change log keeps a change. */
  readonly changesKeepDays: number;
  /** Changes the change log keeps at most. */
  readonly changesKeepCount: number;
  /** Event streams open at once in this process; more get 503. */
  readonly eventsMaxStreams: number;
  /** Event streams one address may have open at once; more get 429. */
  readonly eventsMaxStreamsPerClient: number;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

type Parser<T> = (raw: string) => T;

interface Option<K extends keyof Config> {
  env: string;
  key: K;
  default: string;
  parse: Parser<Config[K]>;
  secret?: boolean;
  description: string;
}

const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function parsePort(raw: string): number {
  if (!/^\d{1,5}$/.test(raw) || Number(raw) > 65535) {
    throw new Error(`must be an integer from 0 to 65535, got "${raw}"`);
  }
  return Number(raw);
}

function parseHost(raw: string): string {
  if (raw.trim() === '' || /\s/.test(raw)) throw new Error(`must be a host name or address, got "${raw}"`);
  return raw;
}

const DEFAULT_DATABASE = './data/nonsense.db';

function parseDatabase(raw: string): DatabaseTarget {
  if (raw.trim() === '') throw new Error('must be a file path or a postgres:// URL, got an empty value');
  if (/^postgres(ql)?:\/\//i.test(raw)) {
    try {
      new URL(raw);
    } catch {
      throw new Error('is not a valid postgres:// URL');
    }
    return { engine: 'postgres', url: raw };
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(raw)) {
    throw new Error('must be a file path (embedded SQLite) or a postgres:// or postgresql:// URL');
  }
  if (raw === ':memory:') return { engine: 'sqlite', file: raw };
  const file = path.resolve(raw);
  return path.dirname(file) === path.resolve(path.dirname(DEFAULT_DATABASE)) ? { engine: 'sqlite', file, createFolder: true } : { engine: 'sqlite', file };
}

function parseBaseUrl(raw: string): string | null {
  if (raw === '') return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`must be an absolute http(s) URL such as https://nonsense.example.org, got "${raw}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('must use http or https');
  if (url.search || url.hash) throw new Error('must not have a query or fragment');
  return url.href.replace(/\/+$/, '');
}

function parseAppName(raw: string): string {
  const name = raw.trim();
  if (name === '' || [...name].length > 80 || /[\p{Cc}]/u.test(name)) {
    throw new Error('must be 1 to 80 characters without control characters');
  }
  return name;
}

function parseRedisUrl(raw: string): string | null {
  if (raw === '') return null;
  if (!/^rediss?:\/\//.test(raw)) throw new Error('must be a redis:// or rediss:// URL');
  try {
    new URL(raw);
  } catch {
    throw new Error('is not a valid URL');
  }
  return raw;
}

function parseLogLevel(raw: string): LogLevel {
  const level = raw.toLowerCase() as LogLevel;
  if (!LOG_LEVELS.includes(level)) throw new Error(`must be one of ${LOG_LEVELS.join(', ')}, got "${raw}"`);
  return level;
}

function parseTrustProxy(raw: string): boolean | number | string[] {
  const value = raw.trim().toLowerCase();
  if (value === '' || value === 'false' || value === '0') return false;
  if (value === 'true') return true;
  if (/^\d+$/.test(value)) return Number(value);
  const list = raw.split(',').map((s) => s.trim()).filter(Boolean);
  if (list.every((item) => /^[0-9a-f.:]+(\/\d{1,3})?$/i.test(item) || /^(loopback|linklocal|uniquelocal)$/.test(item))) {
    return list;
  }
  throw new Error('must be false, true, a number of proxy hops, or a comma-separated list of addresses/CIDRs');
}

const WINDOW_UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000 };

/** Parses `N/window` (e.g. `600/1m`, `10/10m`, `5/s`) or `off`. */
export function parseRateLimit(raw: string): RateLimit {
  const value = raw.trim().toLowerCase();
  if (value === 'off') return null;
  const match = /^(\d{1,9})\/(\d{0,6})([smh])$/.exec(value);
  if (!match) throw new Error(`must be "N/window" such as 600/1m, 10/10m or 5/s, or "off", got "${raw}"`);
  const max = Number(match[1]);
  const count = match[2] === '' ? 1 : Number(match[2]);
  if (max < 1 || count < 1) throw new Error('needs a count and a window of at least 1');
  return { max, windowMs: count * WINDOW_UNITS[match[3]!]! };
}

/** Parses `duration/window` (e.g. `15s/1m`, `500ms/10s`) or `off`. */
function parseTimeBudget(raw: string): TimeBudget {
  const value = raw.trim().toLowerCase();
  if (value === 'off') return null;
  const match = /^(\d{1,7}(?:ms|s|m))\/(\d{0,6})([smh])$/.exec(value);
  const ms = match ? parseDuration(match[1]!) : null;
  const count = match?.[2] === '' ? 1 : Number(match?.[2]);
  if (!match || ms === null || count < 1) throw new Error(`must be "duration/window" such as 15s/1m or 500ms/10s, or "off", got "${raw}"`);
  return { ms, windowMs: count * WINDOW_UNITS[match[3]!]! };
}

/** Parses a count from 1 to 9999, or `off` (null). */
function parseLimit(raw: string): number | null {
  const value = raw.trim().toLowerCase();
  if (value === 'off') return null;
  if (!/^\d{1,4}$/.test(value) || Number(value) < 1) throw new Error(`must be a number from 1 to 9999, or "off", got "${raw}"`);
  return Number(value);
}

function parseSwitch(raw: string): boolean {
  const value = raw.trim().toLowerCase();
  if (['auto', 'on', 'true', '1', 'yes'].includes(value)) return true;
  if (['off', 'false', '0', 'no'].includes(value)) return false;
  throw new Error(`must be "auto" or "off", got "${raw}"`);
}

function parseMetricsToken(raw: string): string | null {
  if (raw === '') return null;
  // It travels in an Authorization header: printable ASCII without spaces, and long enough to resist guessing.
  if (!/^[\x21-\x7e]{16,256}$/.test(raw)) throw new Error('must be 16 to 256 printable characters without spaces');
  return raw;
}

/** Parses a duration such as `500ms`, `30s` or `2m`, or `off` (null). */
function parseDuration(raw: string): number | null {
  const value = raw.trim().toLowerCase();
  if (value === 'off') return null;
  const match = /^(\d{1,7})(ms|s|m)$/.exec(value);
  if (!match || Number(match[1]) === 0) throw new Error(`must be a duration such as 500ms, 30s or 2m, or "off", got "${raw}"`);
  return Number(match[1]) * { ms: 1, s: 1000, m: 60_000 }[match[2] as 'ms' | 's' | 'm'];
}

/** Parses a wait that cannot be switched off: a duration from 1 ms to 1 minute. */
function parseWait(raw: string): number {
  const value = parseDuration(raw);
  if (value === null || value > 60_000) throw new Error(`must be a duration from 1ms to 1m such as 500ms or 5s, got "${raw}"`);
  return value;
}

function parseUtilization(raw: string): number | null {
  const value = raw.trim().toLowerCase();
  if (value === 'off') return null;
  const number = Number(value);
  if (!/^(0?\.\d+|1(\.0*)?)$/.test(value) || number <= 0 || number > 1) {
    throw new Error(`must be a fraction above 0 and at most 1 such as 0.98, or "off", got "${raw}"`);
  }
  return number;
}

const BYTE_UNITS: Record<string, number> = { '': 1, b: 1, k: 1024, kib: 1024, m: 1024 ** 2, mib: 1024 ** 2, g: 1024 ** 3, gib: 1024 ** 3 };

/** Parses a size such as `32MiB`, `512KiB`, `1g` or a plain number of bytes (binary units). */
function parseBytes(raw: string): number {
  const match = /^(\d{1,13})\s*([a-z]*)$/.exec(raw.trim().toLowerCase());
  const unit = match ? BYTE_UNITS[match[2]!] : undefined;
  if (!match || unit === undefined) throw new Error(`must be a size such as 32MiB, 512KiB or a number of bytes, got "${raw}"`);
  const bytes = Number(match[1]) * unit;
  if (!Number.isSafeInteger(bytes)) throw new Error(`is too large, got "${raw}"`);
  return bytes;
}

/** Parses a size that cannot be 0 (see parseBytes). */
function parsePositiveBytes(raw: string): number {
  const bytes = parseBytes(raw);
  if (bytes < 1024) throw new Error(`must be at least 1KiB, got "${raw}"`);
  return bytes;
}

/** Parses `auto` (one thread per core but one, at least one) or a thread count from 1 to 64. */
function parseThreads(raw: string): number {
  const value = raw.trim().toLowerCase();
  if (value === 'auto') return Math.max(1, os.availableParallelism() - 1);
  if (!/^\d{1,2}$/.test(value) || Number(value) < 1 || Number(value) > 64) throw new Error(`must be "auto" or a number from 1 to 64, got "${raw}"`);
  return Number(value);
}

/**
 * The galaxy layout's threads for `auto` on `cores` cores: 2 with four cores or more, else 1. A server
 * keeps a core for its event loop and one for its read workers; a second layout thread on fewer cores
 * would only compete with them, and it holds about 45 MiB more (its own copy of the model, its heap).
 */
export function galaxyThreadsFor(cores: number): number {
  return cores >= 4 ? 2 : 1;
}

/**
 * The layout's threads of `nonsense galaxy` on `cores` cores when neither `--threads` nor
 * GALAXY_THREADS says: one a core, up to 8 (about 45 MiB each). The command answers no requests, and
 * its helper threads run below request handling in priority, so a server beside it still answers first.
 */
export function galaxyCommandThreadsFor(cores: number): number {
  return Math.min(8, Math.max(1, cores));
}

/** Parses `auto` (galaxyThreadsFor) or a number of threads from 1 to 16, for the galaxy's layout. */
export function parseGalaxyThreads(raw: string): number {
  const value = raw.trim().toLowerCase();
  if (value === 'auto') return galaxyThreadsFor(os.availableParallelism());
  if (!/^\d{1,2}$/.test(value) || Number(value) < 1 || Number(value) > 16) throw new Error(`must be "auto" or a number from 1 to 16, got "${raw}"`);
  return Number(value);
}

/** Parses `auto` or a number of connections from 1 to 9999999. */
function parseConnections(raw: string): number | 'auto' {
  const value = raw.trim().toLowerCase();
  if (value === 'auto') return value;
  if (!/^\d{1,7}$/.test(value) || Number(value) < 1) throw new Error(`must be "auto" or a number from 1 to 9999999, got "${raw}"`);
  return Number(value);
}

/** Parses `auto`, `off` (null) or a number of connections from 1 to 9999999. */
function parseConnectionsPerClient(raw: string): number | 'auto' | null {
  if (raw.trim().toLowerCase() === 'off') return null;
  return parseConnections(raw);
}

/** Parses a whole number from `min` to `max`. */
function parseCount(min: number, max: number): Parser<number> {
  return (raw) => {
    const value = raw.trim();
    if (!/^\d{1,9}$/.test(value) || Number(value) < min || Number(value) > max) throw new Error(`must be a number from ${min} to ${max}, got "${raw}"`);
    return Number(value);
  };
}

function parseQueueLength(raw: string): number {
  if (!/^\d{1,5}$/.test(raw.trim())) throw new Error(`must be a number from 0 to 99999, got "${raw}"`);
  return Number(raw.trim());
}

/** Every option, in the order the README documents them. */
export const OPTIONS = [
  { env: 'PORT', key: 'port', default: '8080', parse: parsePort, description: 'TCP port to listen on' },
  { env: 'HOST', key: 'host', default: '127.0.0.1', parse: parseHost, description: 'address to listen on (0.0.0.0 for all)' },
  {
    env: 'DATABASE_URL', key: 'database', default: DEFAULT_DATABASE, parse: parseDatabase, secret: true,
    description: 'a file path selects embedded SQLite; a postgres:// URL selects PostgreSQL',
  },
  { env: 'BASE_URL', key: 'baseUrl', default: '', parse: parseBaseUrl, description: 'public base URL for absolute links (default: from each request)' },
  { env: 'APP_NAME', key: 'appName', default: 'Nonsense Entry Service', parse: parseAppName, description: 'service name shown to people' },
  { env: 'REDIS_URL', key: 'redisUrl', default: '', parse: parseRedisUrl, secret: true, description: 'optional Redis for rate limits shared across instances' },
  { env: 'LOG_LEVEL', key: 'logLevel', default: 'info', parse: parseLogLevel, description: 'fatal, error, warn, info, debug, trace or silent' },
  { env: 'TRUST_PROXY', key: 'trustProxy', default: 'false', parse: parseTrustProxy, description: 'honour X-Forwarded-For from these proxies' },
  { env: 'RATE_LIMIT_READ', key: 'rateLimitRead', default: '600/1m', parse: parseRateLimit, description: 'per-address limit on public GETs' },
  { env: 'RATE_LIMIT_IMAGE', key: 'rateLimitImage', default: '60/1m', parse: parseRateLimit, description: 'per-address limit on share images' },
  { env: 'RATE_LIMIT_REPORT', key: 'rateLimitReport', default: '10/10m', parse: parseRateLimit, description: 'per-address limit on reports' },
  { env: 'DEMO_DATA', key: 'demoData', default: 'auto', parse: parseSwitch, description: 'load demo data into an empty embedded database on start (auto or off)' },
  { env: 'METRICS_TOKEN', key: 'metricsToken', default: '', parse: parseMetricsToken, secret: true, description: 'bearer token required by /metrics (default: open)' },
  {
    env: 'OVERLOAD_MAX_EVENT_LOOP_DELAY', key: 'overloadMaxEventLoopDelayMs', default: '1s', parse: parseDuration,
    description: 'answer 503 while the mean event-loop delay exceeds this (or off)',
  },
  {
    env: 'OVERLOAD_MAX_EVENT_LOOP_UTILIZATION', key: 'overloadMaxEventLoopUtilization', default: 'off', parse: parseUtilization,
    description: 'answer 503 while the event loop is busier than this fraction (or off)',
  },
  { env: 'REQUEST_TIMEOUT', key: 'requestTimeoutMs', default: '30s', parse: parseDuration, description: 'time a client has to send a whole request (or off)' },
  {
    env: 'MAX_CONNECTIONS', key: 'maxConnections', default: 'auto', parse: parseConnections,
    description: 'open connections at most; more are closed at once (auto: the file-descriptor limit less a reserve)',
  },
  {
    env: 'MAX_CONNECTIONS_PER_CLIENT', key: 'maxConnectionsPerClient', default: 'auto', parse: parseConnectionsPerClient,
    description: 'open connections of one peer address at most; more are closed at once (auto: 64, off with TRUST_PROXY; or off)',
  },
  {
    env: 'SQLITE_BUSY_TIMEOUT', key: 'sqliteBusyTimeoutMs', default: '5s', parse: parseWait,
    description: 'how long an embedded-database write waits for another process to release the lock, then 503',
  },
  { env: 'CARD_CACHE_BYTES', key: 'cardCacheBytes', default: '32MiB', parse: parseBytes, description: 'memory for rendered share cards (e.g. 32MiB, 0 for none)' },
  { env: 'CARD_RENDER_THREADS', key: 'cardRenderThreads', default: 'auto', parse: parseThreads, description: 'worker threads drawing share cards (auto: one per core but one)' },
  { env: 'CARD_RENDER_QUEUE', key: 'cardRenderQueue', default: '32', parse: parseQueueLength, description: 'share cards that may wait for a render thread; more get 503' },
  { env: 'CARD_RENDER_TIMEOUT', key: 'cardRenderTimeoutMs', default: '10s', parse: parseWait, description: 'wall time one share card may take to draw; then its render thread is replaced and the card gets 503 for 10 minutes' },
  {
    env: 'READ_WORKER_THREADS', key: 'readWorkerThreads', default: '2', parse: parseThreads,
    description: 'worker threads reading an SQLite file for exports, searches and OData (auto: one per core but one)',
  },
  {
    env: 'READ_WORKER_QUEUE', key: 'readWorkerQueue', default: '64', parse: parseQueueLength,
    description: 'tasks that may wait for the read workers (SQLite file) before new exports, searches and OData reads get 503',
  },
  {
    env: 'HEAVY_REQUESTS_PER_CLIENT', key: 'heavyRequestsPerClient', default: '4', parse: parseLimit,
    description: 'exports, searches, OData reads, galaxy and API reference requests one address may have running at once; more get 429',
  },
  {
    env: 'ODATA_TIME_BUDGET', key: 'odataTimeBudget', default: '15s/1m', parse: parseTimeBudget,
    description: 'database time the OData reads of one address may take per window (e.g. 15s/1m); past it, 429 until it recovers',
  },
  {
    env: 'ENTRY_CACHE_BYTES', key: 'entryCacheBytes', default: '64MiB', parse: parseBytes,
    description:
      'memory for visible entries held as prepared JSON (about 450 bytes an entry of 110 characters): all of them when they fit, ' +
      'then the ones most recently asked for by UUID; random and by-UUID answer from it without the database (0: always the database)',
  },
  {
    env: 'GALAXY_CACHE_BYTES', key: 'galaxyCacheBytes', default: '48MiB', parse: parseBytes,
    description: 'memory for the galaxy\'s stars changed since its stored answer was written (about 250 bytes a star; beyond it requests walk the database; 0 for none)',
  },
  { env: 'GALAXY', key: 'galaxy', default: 'auto', parse: parseSwitch, description: 'keep the galaxy laid out in a background thread (auto or off; `nonsense galaxy` works either way)' },
  {
    env: 'GALAXY_THREADS', key: 'galaxyThreads', default: 'auto', parse: parseGalaxyThreads,
    description: 'threads a full layout of the galaxy places entries on, all below request handling in priority (auto: 2 with four cores or more, else 1; 1 to 16)',
  },
  {
    env: 'RATE_LIMIT_CACHE_BYTES', key: 'rateLimitCacheBytes', default: '8MiB', parse: parsePositiveBytes,
    description: 'memory for per-address rate-limit counters kept in the process (without Redis); the oldest go first',
  },
  { env: 'CHANGES_KEEP_DAYS', key: 'changesKeepDays', default: '30', parse: parseCount(1, 3650), description: 'days the change log keeps a change (1 to 3650)' },
  {
    env: 'CHANGES_KEEP_COUNT', key: 'changesKeepCount', default: '100000', parse: parseCount(1000, 100_000_000),
    description: 'changes the change log keeps at most (1000 to 100000000); older ones are removed in the background',
  },
  { env: 'EVENTS_MAX_STREAMS', key: 'eventsMaxStreams', default: '5000', parse: parseCount(1, 1_000_000), description: 'event streams open at once in this process; more get 503' },
  {
    env: 'EVENTS_MAX_STREAMS_PER_CLIENT', key: 'eventsMaxStreamsPerClient', default: '8', parse: parseCount(1, 1_000_000),
    description: 'event streams one address may have open at once; more get 429',
  },
] as const satisfies readonly Option<keyof Config>[];

/**
 * loadConfig reads and validates every option from `env`. It throws a ConfigError naming each
 * variable that is wrong, with what was expected.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const problems: string[] = [];
  const values: Record<string, unknown> = {};
  for (const option of OPTIONS) {
    const raw = env[option.env] ?? option.default;
    try {
      values[option.key] = option.parse(raw);
    } catch (error) {
      problems.push(`${option.env} ${(error as Error).message}`);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(values) as unknown as Config;
}

/** describeConfig lists the effective settings for logs, with secrets redacted. */
export function describeConfig(config: Config): Record<string, unknown> {
  const shown: Record<string, unknown> = {};
  for (const option of OPTIONS) {
    const value = config[option.key];
    shown[option.env] = 'secret' in option && option.secret ? redact(value) : value;
  }
  return shown;
}

function redact(value: unknown): unknown {
  if (value === null) return null;
  if (value && typeof value === 'object' && 'url' in value) {
    const url = new URL(String((value as { url: string }).url));
    if (url.password) url.password = '***';
    return { ...value, url: url.href };
  }
  if (typeof value === 'string' && /^\w+:\/\//.test(value)) {
    const url = new URL(value);
    if (url.password) url.password = '***';
    return url.href;
  }
  // A secret that is not a URL (a token) is hidden whole.
  return typeof value === 'string' ? '***' : value;
}
