/**
 * Idle connections, through the server the app's serverFactory makes (plugins/fast-lane.ts), which
 * sets Fastify's connectionTimeout as Fastify does: a connection with no traffic either way for the
 * timeout is dropped, whether it never sent a request or stopped reading its answer; one with
 * traffic stays, however long its answer takes.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { FastLane } from '../../src/plugins/fast-lane.ts';

const IDLE_MS = 400;

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

let server: Server | undefined;

async function serve(handler: Handler): Promise<number> {
  const options = { connectionTimeout: IDLE_MS, keepAliveTimeout: 5000, requestTimeout: 0 };
  server = new FastLane().serverFactory(handler, options as never) as Server;
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return (server.address() as net.AddressInfo).port;
}

/** closedAfter resolves with the ms from now until `socket` closes. */
function closedAfter(socket: net.Socket): Promise<number> {
  const started = performance.now();
  return new Promise((resolve) => socket.once('close', () => resolve(performance.now() - started)));
}

afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  server = undefined;
});

describe('idle connections', () => {
  it('drops a connection that sends nothing, after the timeout and not before', async () => {
    const port = await serve((_request, response) => response.end('never asked'));
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => {});
    await new Promise((resolve) => socket.once('connect', resolve));
    const ms = await closedAfter(socket);
    expect(ms).toBeGreaterThanOrEqual(IDLE_MS - 20);
    expect(ms).toBeLessThan(IDLE_MS * 3);
  });

  it('keeps a connection whose answer is slow but moving', async () => {
    const port = await serve((_request, response) => {
      let sent = 0;
      const tick = setInterval(() => {
        response.write(`${sent}\n`);
        if (++sent === 12) {
          clearInterval(tick);
          response.end();
        }
      }, IDLE_MS / 4);
    });
    const started = performance.now();
    const body = await (await fetch(`http://127.0.0.1:${port}/`)).text();
    expect(performance.now() - started).toBeGreaterThan(IDLE_MS * 2);
    expect(body.split('\n').filter(Boolean)).toHaveLength(12);
  });

  it('drops a connection whose client stopped reading its answer', async () => {
    let closed: () => void;
    const dropped = new Promise<void>((resolve) => (closed = resolve));
    const port = await serve((_request, response) => {
      const chunk = Buffer.alloc(64 * 1024, 'x');
      const more = () => {
        while (response.write(chunk));
      };
      response.on('drain', more);
      response.on('close', () => closed());
      more();
    });
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => {});
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    // Read the first bytes, then never again: the server's writes stop once the buffers are full.
    await new Promise((resolve) => socket.once('data', resolve));
    socket.pause();
    const started = performance.now();
    await dropped;
    const ms = performance.now() - started;
    expect(ms).toBeGreaterThanOrEqual(IDLE_MS - 20);
    expect(ms).toBeLessThan(IDLE_MS * 5);
    socket.destroy();
  });
});
