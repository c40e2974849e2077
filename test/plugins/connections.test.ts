/**
 * Connection budgets (src/plugins/connections.ts): the budget derived from the descriptor limit, the
 * defaults of MAX_CONNECTIONS and MAX_CONNECTIONS_PER_CLIENT, and both budgets held on a real server:
 * past them a connection is closed at once and counted, and a closed connection frees its place.
 */
import http, { type Server } from 'node:http';
import type net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { registry } from '../../src/metrics/registry.ts';
import { connectionBudget, connectionLimits, descriptorLimit, FALLBACK_DESCRIPTOR_LIMIT, limitConnections, openFilesLimit } from '../../src/plugins/connections.ts';
import { openIdle } from '../sockets.ts';

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            4096                 524288               files
Max locked memory         8388608              8388608              bytes
`;

describe('the connection budget', () => {
  it('reads the soft limit on open files from /proc/self/limits, and falls back where it cannot', () => {
    expect(openFilesLimit(LIMITS)).toBe(4096);
    expect(openFilesLimit(LIMITS.replace('4096   ', 'unlimited'))).toBeNull();
    expect(descriptorLimit(() => LIMITS)).toEqual({ limit: 4096, known: true });
    expect(descriptorLimit(() => 'no such line')).toEqual({ limit: FALLBACK_DESCRIPTOR_LIMIT, known: false });
    expect(
      descriptorLimit(() => {
        throw new Error('ENOENT');
      }),
    ).toEqual({ limit: FALLBACK_DESCRIPTOR_LIMIT, known: false });
    if (process.platform === 'linux') expect(descriptorLimit().known).toBe(true);
  });

  it('leaves a reserve of a tenth of the descriptors, at least 128 and at most half', () => {
    expect(connectionBudget(1024)).toBe(896);
    expect(connectionBudget(20_000)).toBe(18_000);
    expect(connectionBudget(256)).toBe(128);
    expect(connectionBudget(100)).toBe(50);
    expect(connectionBudget(1)).toBe(1);
  });

  it('caps one address at 64 by default, and not at all behind a trusted proxy', () => {
    const limits = (env: Record<string, string>) => connectionLimits(loadConfig({ ...env }), 1024);
    expect(limits({})).toEqual({ max: 896, perClient: 64 });
    expect(limits({ TRUST_PROXY: '10.0.0.2' })).toEqual({ max: 896, perClient: null });
    expect(limits({ TRUST_PROXY: 'true', MAX_CONNECTIONS_PER_CLIENT: '500' })).toEqual({ max: 896, perClient: 500 });
    expect(limits({ MAX_CONNECTIONS: '40' })).toEqual({ max: 40, perClient: 40 });
    expect(limits({ MAX_CONNECTIONS: '5000', MAX_CONNECTIONS_PER_CLIENT: 'off' })).toEqual({ max: 5000, perClient: null });
    expect(() => loadConfig({ MAX_CONNECTIONS: '0' })).toThrow(/MAX_CONNECTIONS must be "auto" or a number/);
    expect(() => loadConfig({ MAX_CONNECTIONS_PER_CLIENT: 'many' })).toThrow(/MAX_CONNECTIONS_PER_CLIENT must be "auto" or a number/);
  });
});

let server: Server | undefined;

async function serve(limits: { max: number; perClient: number | null }): Promise<number> {
  server = http.createServer((_request, response) => response.end('ok'));
  limitConnections(server, limits);
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return (server.address() as net.AddressInfo).port;
}

afterEach(async () => {
  const open = server;
  if (open === undefined) return;
  server = undefined;
  open.closeAllConnections();
  await new Promise((resolve) => open.close(resolve));
});

/** until waits (bounded) for `condition`. */
async function until(condition: () => boolean, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('the condition did not hold in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** get asks for `/` on a connection of its own from `localAddress`: the status, or the error's code. */
function get(port: number, localAddress = '127.0.0.1'): Promise<number | string> {
  return new Promise((resolve) => {
    const request = http.get({ port, host: '127.0.0.1', localAddress, agent: false }, (response) => {
      response.resume();
      resolve(response.statusCode!);
    });
    request.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

/** answersAgain asks until an answer comes (the server sees a close a moment after the client), for at most 3 s. */
async function answersAgain(port: number): Promise<number | string> {
  const deadline = Date.now() + 3000;
  for (;;) {
    const status = await get(port);
    if (status === 200 || Date.now() > deadline) return status;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function refused(budget: string): Promise<number> {
  const metric = await registry.getSingleMetric('nonsense_connections_refused_total')!.get();
  return metric.values.find((value) => value.labels.budget === budget)?.value ?? 0;
}

describe('the budgets on a server', () => {
  it('closes the connections of an address past its budget at once, and lets others and later ones in', async () => {
    const port = await serve({ max: 100, perClient: 5 });
    const before = await refused('per_client');
    const idle = await openIdle(port, 8);
    await until(() => idle.filter((c) => c.closed).length === 3);
    // The first five stay: nothing closes a connection within its budget.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(idle.map((c) => c.closed)).toEqual([false, false, false, false, false, true, true, true]);
    expect((await refused('per_client')) - before).toBe(3);
    expect(await get(port)).not.toBe(200);
    // Another address has a budget of its own.
    expect(await get(port, '127.0.0.2')).toBe(200);
    // A closed connection gives its place back.
    idle[0]!.socket.destroy();
    expect(await answersAgain(port)).toBe(200);
    for (const c of idle) c.socket.destroy();
  });

  it('closes connections past the server budget at once and counts them', async () => {
    const port = await serve({ max: 4, perClient: null });
    const before = await refused('total');
    const idle = await openIdle(port, 6);
    await until(() => idle.filter((c) => c.closed).length === 2);
    expect(idle.slice(0, 4).every((c) => !c.closed)).toBe(true);
    expect((await refused('total')) - before).toBe(2);
    for (const c of idle) c.socket.destroy();
    expect(await answersAgain(port)).toBe(200);
  });
});
