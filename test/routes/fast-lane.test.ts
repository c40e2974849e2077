/**
 * The fast lane (src/plugins/fast-lane.ts) answers the random and by-UUID reads before Fastify over a
 * real port. It must be indistinguishable from the Fastify routes that `inject` reaches: the same
 * status, headers and body, the same access-log line, metrics and rate-limit accounting, and it must
 * leave everything else to Fastify.
 */
import http from 'node:http';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { LANE_REVISION_AGE_MS, createTestApp, entry, setState, type TestContext } from '../helper.ts';

const PLAIN = entry('A teapot applied for a job as a kettle.', 1_700_000_001, '0b6f5e0a-1c2d-4e3f-8a9b-0c1d2e3f4a5b');
const OTHER = entry('The moon is only a rumour.', 1_700_000_002, '1c7a6f1b-2d3e-4f40-9bac-1d2e3f4a5b6c');
const VARIABLES = [{ name: '$ANIMAL$', description: 'An animal.', values: ['goose', 'newt'] }];

/** Headers that differ between any two answers, whoever sends them. */
const PER_ANSWER = new Set(['x-request-id', 'date', 'connection', 'keep-alive', 'transfer-encoding']);

function comparable(headers: Record<string, unknown>): Record<string, string> {
  const pairs: [string, string][] = Object.entries(headers)
    .filter(([name]) => !PER_ANSWER.has(name.toLowerCase()))
    .map(([name, value]) => [name.toLowerCase(), String(value)]);
  return Object.fromEntries(pairs.sort(([a], [b]) => a.localeCompare(b)));
}

/** until waits for `check` to hold, polling, for at most 10 s (expect.poll is for tests, not their set-up). */
async function until(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out waiting for the entry snapshot');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function fetchHeaders(response: Response): Record<string, string> {
  return Object.fromEntries(response.headers.entries());
}

describe('the fast lane', () => {
  let t: TestContext;
  let base: string;
  let served: ReturnType<typeof vi.spyOn>;
  /** Whether the last request over the port was answered in the lane. */
  const inLane = () => served.mock.results.at(-1)?.value === true;

  beforeAll(async () => {
    t = await createTestApp({ entries: [PLAIN], variables: VARIABLES, revisionMaxAgeMs: LANE_REVISION_AGE_MS });
    served = vi.spyOn(t.app.fastLane, 'serve');
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const address = t.app.server.address() as { port: number };
    base = `http://127.0.0.1:${address.port}`;
    // The first read builds the entry snapshot; the lane answers once it is current.
    await until(async () => (await fetch(`${base}/api/v1/nonsense/random`)).status === 200 && inLane());
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers random and by UUID with the bytes and headers of the Fastify routes', async () => {
    for (const path of ['/api/v1/nonsense/random', `/api/v1/nonsense/${PLAIN.uuid}`, `/api/v1/nonsense/${PLAIN.uuid.toUpperCase()}`]) {
      const lane = await fetch(`${base}${path}`);
      expect(inLane(), path).toBe(true);
      const fastify = await t.app.inject({ url: path });
      expect(lane.status).toBe(200);
      expect(fastify.statusCode).toBe(200);
      expect(await lane.text()).toBe(fastify.body);
      expect(comparable(fetchHeaders(lane))).toEqual(comparable(fastify.headers));
      expect(lane.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it('answers a current If-None-Match with the 304 of the Fastify route', async () => {
    const path = `/api/v1/nonsense/${PLAIN.uuid}`;
    const etag = (await fetch(`${base}${path}`)).headers.get('etag')!;
    // fetch adds `Cache-Control: no-cache` to a conditional request unless it has a Cache-Control.
    const conditional = { 'if-none-match': etag, 'cache-control': 'max-age=0' };
    const lane = await fetch(`${base}${path}`, { headers: conditional });
    expect(inLane()).toBe(true);
    const fastify = await t.app.inject({ url: path, headers: conditional });
    expect([lane.status, fastify.statusCode]).toEqual([304, 304]);
    expect(comparable(fetchHeaders(lane))).toEqual(comparable(fastify.headers));
    // A stale tag gets the entry.
    const stale = await fetch(`${base}${path}`, { headers: { ...conditional, 'if-none-match': 'W/"r0"' } });
    expect(stale.status).toBe(200);
    expect(inLane()).toBe(true);
  });

  it('keeps the caller’s sane request id', async () => {
    const response = await fetch(`${base}/api/v1/nonsense/random`, { headers: { 'x-request-id': 'proxy-id.42' } });
    expect(inLane()).toBe(true);
    expect(response.headers.get('x-request-id')).toBe('proxy-id.42');
    // The name in any case (Node keeps the client's spelling in the raw headers); sent twice, neither.
    const ids = await Promise.all(
      [{ 'X-Request-ID': 'Proxy.Case' }, { 'X-Request-Id': ['one', 'two'] }].map(
        (headers) =>
          new Promise<string | undefined>((resolve, reject) => {
            const request = http.get(`${base}/api/v1/nonsense/random`, { headers }, (res) => {
              res.resume();
              resolve(res.headers['x-request-id'] as string | undefined);
            });
            request.on('error', reject);
          }),
      ),
    );
    expect(ids[0]).toBe('Proxy.Case');
    expect(ids[1]).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('leaves errors, other methods, query strings and other shapes of the path to Fastify', async () => {
    const cases: [string, RequestInit, number][] = [
      [`/api/v1/nonsense/${OTHER.uuid}`, {}, 404],
      ['/api/v1/nonsense/random?lang=en', {}, 200],
      [`/api/v1/nonsense/${PLAIN.uuid}?x=1`, {}, 200],
      ['/api/v1/nonsense/random/', {}, 200],
      ['/api/v1/nonsense/random', { method: 'HEAD' }, 200],
      [`/api/v1/nonsense/${PLAIN.uuid}.jpg`, {}, 404],
      [`/api/v1/nonsense/${PLAIN.uuid.slice(0, 35)}x`, {}, 400],
      ['/api/v1/nonsense/status', {}, 200],
    ];
    for (const [path, init, status] of cases) {
      const response = await fetch(`${base}${path}`, init);
      expect(response.status, path).toBe(status);
      expect(inLane(), path).toBe(false);
      if (status >= 400) expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    }
  });

  it('fills in server variables per request', async () => {
    const withVariable = entry('The $ANIMAL$ keeps the minutes.', 1_700_000_003);
    await t.storage.entries.insertEntries([withVariable]);
    const texts = new Set<string>();
    await expect
      .poll(async () => {
        const response = await fetch(`${base}/api/v1/nonsense/${withVariable.uuid}`);
        if (response.status === 200 && inLane()) texts.add(((await response.json()) as { nonsense: string }).nonsense);
        return [...texts].sort();
      })
      .toEqual(['The goose keeps the minutes.', 'The newt keeps the minutes.']);
  });

  it('answers Latin-1 and wider texts byte for byte, with their length in bytes', async () => {
    const texts = ['Crème brûlée at the café, ÿ.', 'The 🦆 reads 漢字 aloud, \u{10FFFF}.', 'The $ANIMAL$ 🦆 keeps the café.', 'The $ANIMAL$ keeps the ledger.'];
    const added = texts.map((text, n) => entry(text, 1_700_000_010 + n));
    await t.storage.entries.insertEntries(added);
    for (const [n, { uuid }] of added.entries()) {
      const path = `/api/v1/nonsense/${uuid}`;
      await expect.poll(async () => (await fetch(`${base}${path}`)).status === 200 && inLane()).toBe(true);
      const lane = await fetch(`${base}${path}`);
      expect(inLane()).toBe(true);
      const bytes = Buffer.from(await lane.arrayBuffer());
      expect(Number(lane.headers.get('content-length'))).toBe(bytes.length);
      const body = JSON.parse(bytes.toString('utf8')) as { nonsense: string; original_nonsense?: string };
      expect(body.original_nonsense ?? body.nonsense).toBe(texts[n]);
      if (body.original_nonsense === undefined) expect(bytes.toString('utf8')).toBe((await t.app.inject({ url: path })).body);
    }
  });

  it('stops answering a hidden entry at once', async () => {
    const hidden = entry('Soon to be hidden.', 1_700_000_004);
    await t.storage.entries.insertEntries([hidden]);
    await expect.poll(async () => (await fetch(`${base}/api/v1/nonsense/${hidden.uuid}`)).status === 200 && inLane()).toBe(true);
    await setState(t.storage, hidden.uuid, 'hidden');
    expect((await fetch(`${base}/api/v1/nonsense/${hidden.uuid}`)).status).toBe(404);
    for (let i = 0; i < 50; i++) {
      const body = (await (await fetch(`${base}/api/v1/nonsense/random`)).json()) as { uuid: string };
      expect(body.uuid).not.toBe(hidden.uuid);
    }
  });

  it('counts its answers in /metrics like the Fastify route', async () => {
    const count = async () => {
      const text = (await t.app.inject({ url: '/metrics' })).body;
      const line = text.split('\n').find((l) => l.startsWith('http_requests_total{') && l.includes('route="/api/v1/nonsense/random"') && l.includes('status="200"') && l.includes('method="GET"'));
      return Number(line?.split(' ').at(-1) ?? 0);
    };
    const before = await count();
    for (let i = 0; i < 5; i++) await fetch(`${base}/api/v1/nonsense/random`);
    expect(inLane()).toBe(true);
    expect((await count()) - before).toBe(5);
  });
});

describe('the fast lane with the access log and the read rate limit', () => {
  let t: TestContext;
  let app: Awaited<ReturnType<typeof buildApp>>;
  let base: string;
  const lines: Record<string, unknown>[] = [];

  beforeAll(async () => {
    // Overload protection on as by default, at a threshold a test never reaches.
    t = await createTestApp({ entries: [PLAIN], revisionMaxAgeMs: LANE_REVISION_AGE_MS, env: { RATE_LIMIT_READ: '6/1m', OVERLOAD_MAX_EVENT_LOOP_DELAY: '10s' } });
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n')) if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    app = await buildApp({ config: t.config, storage: t.storage, cards: t.cards, logger: { level: 'info', stream } });
    await app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    // Build the entry snapshot from another address, so that 127.0.0.1's budget stays whole.
    await app.inject({ url: '/api/v1/nonsense/random', remoteAddress: '10.0.0.9' });
    await until(async () => /^nonsense_cache_items\{cache="entry_snapshot"\} 1$/m.test((await app.inject({ url: '/metrics' })).body));
  });
  afterAll(async () => {
    await app.close();
    await t.close();
  });

  it('spends the read budget like @fastify/rate-limit, leaves pressure and refusals to Fastify, and logs every answer', async () => {
    const served = vi.spyOn(app.fastLane, 'serve');
    const path = `/api/v1/nonsense/${PLAIN.uuid}`;
    const get = async (i: number) => {
      const response = await fetch(`${base}${path}`, { headers: { 'x-request-id': `lane-${i}` } });
      if (response.status === 200) expect(Number(response.headers.get('ratelimit-reset'))).toBeGreaterThan(55);
      return [response.status, response.headers.get('ratelimit-limit'), response.headers.get('ratelimit-remaining'), served.mock.results.at(-1)?.value];
    };
    const answers = [];
    for (let i = 1; i <= 4; i++) answers.push(await get(i));
    // Under pressure the lane leaves the request to Fastify; one sample of it is not sustained, so Fastify serves it.
    const pressure = vi.spyOn(app, 'isUnderPressure').mockReturnValue(true);
    answers.push(await get(5));
    pressure.mockRestore();
    answers.push(await get(6));
    expect(answers).toEqual([
      [200, '6', '5', true],
      [200, '6', '4', true],
      [200, '6', '3', true],
      [200, '6', '2', true],
      [200, '6', '1', false],
      [200, '6', '0', true],
    ]);
    // One too many: the lane spends nothing and Fastify's hook refuses it.
    const refused = await fetch(`${base}${path}`, { headers: { 'x-request-id': 'lane-7' } });
    expect(served.mock.results.at(-1)?.value).toBe(false);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(refused.headers.get('retry-after')).not.toBeNull();

    // One access line per answer, the lane's as Fastify's.
    await expect.poll(() => lines.filter((line) => String(line.reqId).startsWith('lane-')).length).toBe(7);
    for (let i = 1; i <= 7; i++) {
      const line = lines.find((l) => l.reqId === `lane-${i}`)!;
      expect(line).toMatchObject({ level: 30, method: 'GET', url: path, status: i === 7 ? 429 : 200, msg: 'request' });
      expect(typeof line.ms).toBe('number');
    }
  });
});
