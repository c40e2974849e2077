/**
 * The service as a real process under a low file-descriptor limit (256): more idle connections than
 * it has descriptors neither end it nor keep it from answering once they close, whether its
 * connection budget holds them off (the default) or is set above the limit so that the descriptors
 * really run out. And one address past MAX_CONNECTIONS_PER_CLIENT has its further connections closed
 * at once, while other addresses are still answered.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, tempDir } from '../helper.ts';
import { BIN, parentEnv } from '../process-helper.ts';
import { openIdle } from '../sockets.ts';
import { until } from '../wait.ts';

const DESCRIPTORS = 256;
/** What MAX_CONNECTIONS=auto leaves for connections out of 256 descriptors (plugins/connections.ts). */
const BUDGET = 128;

interface Service {
  port: number;
  alive(): boolean;
  output(): string;
  stop(): Promise<void>;
}

/** get asks for `path` on a connection of its own from `localAddress`: the status and body, or the error's code. */
function get(port: number, path: string, localAddress = '127.0.0.1'): Promise<{ status: number | string; body: string }> {
  return new Promise((resolve) => {
    const request = http.get({ port, host: '127.0.0.1', path, localAddress, agent: false, timeout: 5000 }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode!, body }));
      response.on('error', () => resolve({ status: 'aborted', body }));
    });
    request.on('timeout', () => request.destroy(new Error('timeout')));
    request.on('error', (error: NodeJS.ErrnoException) => resolve({ status: error.code ?? error.message, body: '' }));
  });
}

/** serve runs `nonsense serve` with at most DESCRIPTORS open files, and resolves once /healthz answers. */
async function serve(database: string, env: Record<string, string>): Promise<Service> {
  const port = await freePort();
  // The limit is set by the shell the service replaces, as `ulimit -n` in a start script would.
  const child = spawn('bash', ['-c', `ulimit -n ${DESCRIPTORS} && exec "$@"`, 'bash', process.execPath, BIN, 'serve'], {
    env: { ...parentEnv, LOG_LEVEL: 'warn', DEMO_DATA: 'off', GALAXY: 'off', RATE_LIMIT_READ: 'off', DATABASE_URL: database, PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const alive = () => child.exitCode === null && child.signalCode === null;
  try {
    await until(
      () => `nonsense serve to be ready:\n${output}`,
      async () => {
        if (!alive()) throw new Error(`nonsense serve exited before it was ready:\n${output}`);
        return (await get(port, '/healthz')).status === 200;
      },
      { timeoutMs: 20_000, intervalMs: 50 },
    );
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  return {
    port,
    alive,
    output: () => output,
    stop: async () => {
      if (alive()) child.kill('SIGKILL');
      await exited;
    },
  };
}

/**
 * How long the process must live with its descriptors held: every timer of its own runs several
 * times meanwhile (the overload sampler every 500 ms). Nothing signals "did not die", so it is a span.
 */
const HELD_SPAN_MS = 2500;

/** answersAgain asks for /healthz until it answers 200, for at most `ms`; the last status. */
async function answersAgain(port: number, ms = 5000): Promise<number | string> {
  let status: number | string = 0;
  await until('/healthz to answer 200', async () => (status = (await get(port, '/healthz')).status) === 200, { timeoutMs: ms, intervalMs: 50 }).catch(() => {});
  return status;
}

/** refused reads `nonsense_connections_refused_total{budget}` from /metrics. */
async function refused(port: number, budget: string, localAddress?: string): Promise<number> {
  const { body } = await get(port, '/metrics', localAddress);
  const line = new RegExp(`^nonsense_connections_refused_total\\{budget="${budget}"\\} (\\d+)$`, 'm').exec(body);
  return line === null ? 0 : Number(line[1]);
}

describe('connections past the file-descriptor limit', { timeout: 90_000 }, () => {
  let dir: string;
  let database: string;
  let service: Service | undefined;
  beforeAll(() => {
    dir = tempDir();
    database = path.join(dir, 'connections.db');
  });
  afterAll(async () => {
    await service?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('holds more idle connections than its descriptors off, lives, and answers again once they close', async () => {
    service = await serve(database, { MAX_CONNECTIONS_PER_CLIENT: 'off' });
    const idle = await openIdle(service.port, DESCRIPTORS + 150);
    await sleep(HELD_SPAN_MS);
    expect(service.alive(), service.output()).toBe(true);
    const open = idle.filter((c) => !c.closed).length;
    expect(open).toBeLessThanOrEqual(BUDGET);
    expect(open).toBeGreaterThan(BUDGET - 10);
    // Full: a new connection is closed before it is answered.
    expect((await get(service.port, '/healthz')).status).not.toBe(200);
    for (const c of idle) c.socket.destroy();
    expect(await answersAgain(service.port)).toBe(200);
    expect(await refused(service.port, 'total')).toBeGreaterThanOrEqual(DESCRIPTORS + 150 - BUDGET);
    expect(service.alive(), service.output()).toBe(true);
    await service.stop();
    service = undefined;
  });

  it('lives through running out of descriptors (MAX_CONNECTIONS above the limit) and answers again once they close', async () => {
    service = await serve(database, { MAX_CONNECTIONS: '5000', MAX_CONNECTIONS_PER_CLIENT: 'off' });
    const idle = await openIdle(service.port, DESCRIPTORS + 150);
    await sleep(HELD_SPAN_MS);
    expect(service.alive(), service.output()).toBe(true);
    // Every descriptor but the process's own is a connection now.
    expect(idle.filter((c) => !c.closed).length).toBeGreaterThan(BUDGET);
    for (const c of idle) c.socket.destroy();
    expect(await answersAgain(service.port)).toBe(200);
    expect((await get(service.port, '/api/v1/nonsense/status')).status).toBe(200);
    expect(service.alive(), service.output()).toBe(true);
    await service.stop();
    service = undefined;
  });

  it('closes the connections of one address past MAX_CONNECTIONS_PER_CLIENT at once, and still answers others', async () => {
    service = await serve(database, { MAX_CONNECTIONS_PER_CLIENT: '8' });
    const idle = await openIdle(service.port, 12);
    // The ones past the budget are gone at once; then nothing closes one within it for a while.
    await until('4 connections closed', () => idle.filter((c) => c.closed).length >= 4, { timeoutMs: 3000, intervalMs: 10 });
    const quietSpan = 300;
    await sleep(quietSpan);
    expect(idle.map((c) => c.closed)).toEqual([...Array<boolean>(8).fill(false), ...Array<boolean>(4).fill(true)]);
    expect((await get(service.port, '/healthz')).status).not.toBe(200);
    // Another address has a budget of its own.
    expect((await get(service.port, '/healthz', '127.0.0.2')).status).toBe(200);
    expect(await refused(service.port, 'per_client', '127.0.0.2')).toBeGreaterThanOrEqual(5);
    // A closed connection gives its place back.
    idle[0]!.socket.destroy();
    expect(await answersAgain(service.port)).toBe(200);
    for (const c of idle) c.socket.destroy();
    await service.stop();
    service = undefined;
  });
});
