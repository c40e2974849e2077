/**
 * Connection budgets. Every open connection holds a file descriptor, and so do the database, the
 * worker threads, the log and the fonts a card reads. Once the process has none left, nothing that
 * needs one works: not the database, not a render thread, not even reading its own memory figures.
 * So connections get a budget below the process's descriptor limit, and one address gets a share of
 * it, so that a single client holding idle connections open cannot take them all. Past either
 * budget a new connection is closed as soon as it is accepted, before any byte of it is read, and
 * counted in `nonsense_connections_refused_total`.
 *
 * The address is the TCP peer's: `X-Forwarded-For` is a request header, unknown when a connection
 * is accepted. Behind a proxy every connection comes from the proxy, so the per-address budget would
 * bind the proxy as a whole; by default it applies only when TRUST_PROXY is off.
 */
import fs from 'node:fs';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { normalizeIP } from '@fastify/rate-limit';
import type { Config } from '../config.ts';
import { connectionsRefused } from '../metrics/registry.ts';

/** The descriptor limit assumed where the process cannot read its own (no /proc): a common soft default. */
export const FALLBACK_DESCRIPTOR_LIMIT = 1024;

/** Descriptors kept for everything but connections, at the least (database, threads, logs, fonts, libuv). */
const MIN_RESERVE = 128;

/** Connections one address may hold open by default (MAX_CONNECTIONS_PER_CLIENT=auto without TRUST_PROXY). */
export const DEFAULT_PER_CLIENT = 64;

/**
 * openFilesLimit reads the soft "Max open files" limit from the text of `/proc/self/limits`; null
 * when the text has none that is a number (`unlimited`, another format).
 */
export function openFilesLimit(limits: string): number | null {
  const match = /^Max open files\s+(\d+)\s/m.exec(limits);
  return match === null ? null : Number(match[1]);
}

/**
 * descriptorLimit is the process's soft RLIMIT_NOFILE as it stands now (Node has no getrlimit, and
 * raises the soft limit to the hard one as it starts), or FALLBACK_DESCRIPTOR_LIMIT where it cannot
 * be read.
 */
export function descriptorLimit(read: () => string = () => fs.readFileSync('/proc/self/limits', 'utf8')): { limit: number; known: boolean } {
  try {
    const limit = openFilesLimit(read());
    if (limit !== null && limit > 0) return { limit, known: true };
  } catch {
    // No procfs (macOS, Windows, a sandbox without /proc): assume the common default.
  }
  return { limit: FALLBACK_DESCRIPTOR_LIMIT, known: false };
}

/**
 * connectionBudget is how many connections a process with `limit` descriptors may hold: the limit
 * less a reserve of a tenth of it, at least MIN_RESERVE, and at most half of it (a very low limit
 * still leaves connections something).
 */
export function connectionBudget(limit: number): number {
  const reserve = Math.min(Math.max(MIN_RESERVE, Math.ceil(limit / 10)), Math.floor(limit / 2));
  return Math.max(1, limit - reserve);
}

export interface ConnectionLimits {
  /** Open connections of the server at most. */
  readonly max: number;
  /** Open connections of one address at most; null: no per-address budget. */
  readonly perClient: number | null;
}

/** connectionLimits resolves MAX_CONNECTIONS and MAX_CONNECTIONS_PER_CLIENT (`auto` included) for a process with `descriptors`. */
export function connectionLimits(config: Pick<Config, 'maxConnections' | 'maxConnectionsPerClient' | 'trustProxy'>, descriptors: number): ConnectionLimits {
  const max = config.maxConnections === 'auto' ? connectionBudget(descriptors) : config.maxConnections;
  const perClient =
    config.maxConnectionsPerClient === 'auto' ? (config.trustProxy === false ? Math.min(DEFAULT_PER_CLIENT, max) : null) : config.maxConnectionsPerClient;
  return { max, perClient };
}

/** limitConnections holds `server` to `limits` (see above); only the server's own connections count. */
export function limitConnections(server: Server, limits: ConnectionLimits): void {
  server.maxConnections = limits.max;
  // Node closes a connection past maxConnections itself, and says so with this event.
  server.on('drop', () => connectionsRefused.inc({ budget: 'total' }));
  const perClient = limits.perClient;
  if (perClient === null) return;
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress;
    // A connection already reset by its peer has no address any more; it is gone either way.
    if (address === undefined) {
      socket.destroy();
      return;
    }
    // IPv6 by its /64, as the rate limits count it: one host holds a whole /64 and can pick any address in it.
    const key = normalizeIP(address);
    const count = open.get(key) ?? 0;
    if (count >= perClient) {
      connectionsRefused.inc({ budget: 'per_client' });
      socket.destroy();
      return;
    }
    open.set(key, count + 1);
    socket.once('close', () => {
      const left = open.get(key)! - 1;
      if (left === 0) open.delete(key);
      else open.set(key, left);
    });
  });
}
