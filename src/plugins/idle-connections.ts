/**
 * Idle connections: a connection with no traffic either way for a while (a download nobody reads any
 * more, a client gone without closing) is dropped, which also ends the work behind it.
 *
 * This is what Node's `server.setTimeout(ms)` does, without its cost on every request: Node re-arms
 * that timer for each request on a connection (a new timer and a bound function, besides refreshing it
 * on every read and write), which measured 1.2 µs of a 16 µs answer (docs/performance.md). Here one
 * timer looks at the open connections every eighth of the timeout and drops those whose byte counts
 * have not moved since a full timeout ago, so a connection goes between `idleMs` and `idleMs` plus an
 * eighth after its last byte; nothing happens per request.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

interface Seen {
  /** Bytes read and written when last looked at. */
  bytes: number;
  /** When those counts were first seen (ms, the sweep's clock). */
  since: number;
}

/** traffic is a connection's bytes both ways so far; `bytesWritten` includes what waits in its buffer. */
const traffic = (socket: Socket) => socket.bytesRead + socket.bytesWritten;

/** dropIdleConnections drops every connection of `server` idle for `idleMs` (see above). */
export function dropIdleConnections(server: Server, idleMs: number): void {
  const open = new Map<Socket, Seen>();
  server.on('connection', (socket: Socket) => {
    open.set(socket, { bytes: traffic(socket), since: performance.now() });
    socket.once('close', () => open.delete(socket));
  });
  const sweep = setInterval(
    () => {
      const now = performance.now();
      for (const [socket, seen] of open) {
        // A connection that cannot be read or closed now must neither end the sweep for the others
        // nor throw out of the timer, which would end the process; the next sweep tries it again.
        try {
          const bytes = traffic(socket);
          if (bytes !== seen.bytes) {
            seen.bytes = bytes;
            seen.since = now;
          } else if (now - seen.since >= idleMs) {
            open.delete(socket);
            socket.destroy();
          }
        } catch {
          continue;
        }
      }
    },
    Math.max(10, Math.round(idleMs / 8)),
  ).unref();
  server.once('close', () => clearInterval(sweep));
}
