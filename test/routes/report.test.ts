import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestApp, entry, setState, type TestContext } from '../helper.ts';

const target = entry('Report me, if you must.', 1_700_000_000, 'dddddddd-0000-4000-8000-000000000001');
const hidden = entry('Already hidden.', 1_700_000_001, 'dddddddd-0000-4000-8000-000000000002');
const REASONS = 'hate_speech, sexual_content, graphic_violence, personal_information, duplicate, other';

describe('POST /api/v1/nonsense/report', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ entries: [target, hidden] });
    await setState(t.storage, hidden.uuid, 'hidden');
  });
  afterAll(() => t.close());

  const report = (payload: unknown, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
    t.app.inject({ method: 'POST', url: '/api/v1/nonsense/report', headers, payload: typeof payload === 'string' ? payload : JSON.stringify(payload) });

  it('files a report and answers 201 with its id and status open', async () => {
    const res = await report({ entryUuid: target.uuid.toUpperCase(), reason: 'other', details: 'It rhymes badly.', extra: 'ignored' });
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), entryUuid: target.uuid, reason: 'other', status: 'open' });
    const stored = await t.storage.reports.list('open');
    expect(stored.find((r) => r.id === body.id)).toMatchObject({ details: 'It rhymes badly.', entry: { uuid: target.uuid, state: 'visible' } });
  });

  it.runIf(process.env.TEST_DATABASE !== 'postgres')('has a read worker read the entry’s pages first, as for an admin’s write', async () => {
    const warm = vi.spyOn(t.app.readWorkers!, 'warm');
    try {
      expect((await report({ entryUuid: target.uuid, reason: 'duplicate' })).statusCode).toBe(201);
      expect(warm).toHaveBeenLastCalledWith({ uuid: target.uuid });
    } finally {
      warm.mockRestore();
    }
  });

  it.each([
    ['no reason', { entryUuid: target.uuid }, new RegExp(`"reason" is required.*${REASONS}`)],
    ['an unknown reason', { entryUuid: target.uuid, reason: 'boring' }, new RegExp(REASONS)],
    ['no entryUuid', { reason: 'other' }, /"entryUuid" is required/],
    ['a malformed entryUuid', { entryUuid: 'not-a-uuid', reason: 'other' }, /"entryUuid" must be a UUID/],
    ['a numeric entryUuid', { entryUuid: 42, reason: 'other' }, /"entryUuid" must be a UUID/],
    ['details over 1000 characters', { entryUuid: target.uuid, reason: 'other', details: 'x'.repeat(1001) }, /1001 characters; at most 1000/],
    ['details that are not text', { entryUuid: target.uuid, reason: 'other', details: ['a'] }, /"details" must be a string/],
    ['an array', [target.uuid], /JSON object/],
    ['null', null, /JSON object/],
  ])('answers 400 for %s', async (_name, payload, detail) => {
    const res = await report(payload);
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(res.json().detail).toMatch(detail);
  });

  it('answers 400 for malformed JSON and for prototype pollution attempts', async () => {
    const broken = await report('{"entryUuid": ');
    expect(broken.statusCode).toBe(400);
    expect(broken.json().detail).toBe('The request body is not valid JSON; check its quotes, commas and brackets (the key "__proto__" is refused too).');
    expect((await report(`{"entryUuid":"${target.uuid}","reason":"other","__proto__":{"admin":true}}`)).statusCode).toBe(400);
  });

  it('answers 415 for anything but JSON', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      const res = await report(`entryUuid=${target.uuid}&reason=other`, { 'content-type': type });
      expect(res.statusCode, type).toBe(415);
      expect(res.json().detail).toMatch(/application\/json/);
    }
  });

  it('answers 413 for a body over 16 KiB', async () => {
    const res = await report({ entryUuid: target.uuid, reason: 'other', details: 'x'.repeat(17 * 1024) });
    expect(res.statusCode).toBe(413);
    expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(res.json().detail).toBe('The request body is too large: at most 16 KiB are accepted here.');
  });

  it('answers 404 for unknown and hidden entries', async () => {
    for (const uuid of ['dddddddd-0000-4000-8000-00000000ffff', hidden.uuid]) {
      const res = await report({ entryUuid: uuid, reason: 'duplicate' });
      expect(res.statusCode).toBe(404);
      expect(res.json().detail).toContain(uuid);
    }
  });
});

describe('report rate limit', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ entries: [target], env: { RATE_LIMIT_REPORT: '3/10m' } });
  });
  afterAll(() => t.close());

  it('answers 429 with Retry-After once an address sends too many', async () => {
    const send = (ip: string) =>
      t.app.inject({ method: 'POST', url: '/api/v1/nonsense/report', remoteAddress: ip, headers: { 'content-type': 'application/json' }, payload: { entryUuid: target.uuid, reason: 'other' } });
    for (let i = 0; i < 3; i++) expect((await send('10.0.0.1')).statusCode).toBe(201);
    const limited = await send('10.0.0.1');
    expect(limited.statusCode).toBe(429);
    expect(limited.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(500);
    expect(limited.headers['ratelimit-limit']).toBe('3');
    expect(limited.json().detail).toMatch(/^Too many requests from your address: at most 3 per 10 minutes; try again in \d+ s\.$/);
    const left = Number(/try again in (\d+) s/.exec(limited.json().detail)![1]);
    expect(left).toBe(Number(limited.headers['retry-after']));
    expect(left).toBeGreaterThan(500);
    expect((await send('10.0.0.2')).statusCode).toBe(201);
  });

  it('does not charge refused reports (400, 413, 415) to the budget; accepted ones and unknown entries are charged', async () => {
    const ip = '10.0.0.3';
    const post = (payload: string, type = 'application/json') =>
      t.app.inject({ method: 'POST', url: '/api/v1/nonsense/report', remoteAddress: ip, headers: { 'content-type': type }, payload });
    const refused = [
      await post('{"entryUuid": '),
      await post(JSON.stringify({ entryUuid: target.uuid, reason: 'boring' })),
      await post(JSON.stringify({ entryUuid: target.uuid, reason: 'other', details: 'bell\u0007' })),
      await post(JSON.stringify({ entryUuid: target.uuid, reason: 'other', details: 'x'.repeat(17 * 1024) })),
      await post(`entryUuid=${target.uuid}&reason=other`, 'text/plain'),
    ];
    expect(refused.map((res) => res.statusCode)).toEqual([400, 400, 400, 413, 415]);
    for (const res of refused) expect(res.headers['ratelimit-remaining']).toBeUndefined();
    const valid = JSON.stringify({ entryUuid: target.uuid, reason: 'other' });
    expect((await post(valid)).statusCode).toBe(201);
    expect((await post(JSON.stringify({ entryUuid: 'dddddddd-0000-4000-8000-00000000ffff', reason: 'other' }))).statusCode).toBe(404);
    const third = await post(valid);
    expect(third.statusCode).toBe(201);
    expect(third.headers['ratelimit-remaining']).toBe('0');
    expect((await post(valid)).statusCode).toBe(429);
  });
});
