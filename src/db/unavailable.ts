/**
 * Database outages told from the drivers' error codes and messages (node-postgres, better-sqlite3):
 * the database is away, full or locked, not the request wrong.
 */

// Socket-level failures to reach a server, and PostgreSQL SQLSTATEs of class 08 (connection
// exception) plus 57P01-57P03 (the server is shutting down or starting) and 53300 (too many
// connections): the database is away or full, not the request wrong.
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', '57P01', '57P02', '57P03', '53300']);
// node-postgres reports a lost connection and a full pool by message only.
const UNREACHABLE_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed and is not queryable|Connection ended unexpectedly/;

/**
 * isDatabaseUnavailable tells whether an error means the database cannot be used right now (server
 * unreachable, connection lost, SQLite locked by another process beyond the busy timeout), so the
 * answer is 503 with Retry-After rather than 500.
 */
export function isDatabaseUnavailable(error: unknown, depth = 0): boolean {
  if (error === null || typeof error !== 'object' || depth > 3) return false;
  const { code, message, errors, cause } = error as { code?: unknown; message?: unknown; errors?: unknown; cause?: unknown };
  if (typeof code === 'string' && (UNREACHABLE_CODES.has(code) || code.startsWith('08') || code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_'))) {
    return true;
  }
  if (typeof message === 'string' && UNREACHABLE_MESSAGES.test(message)) return true;
  // A host name with several addresses fails as an AggregateError of one error per address.
  if (Array.isArray(errors) && errors.some((e) => isDatabaseUnavailable(e, depth + 1))) return true;
  return isDatabaseUnavailable(cause, depth + 1);
}
