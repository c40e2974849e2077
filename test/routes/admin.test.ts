import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DEMO_DIR } from '../../src/demo/load-demo.ts';
import { textKey } from '../../src/domain/text.ts';
import { createTestApp, entry, type TestContext } from '../helper.ts';

const first = entry('First entry for the moderators.', 1_700_000_000, 'ffffffff-0000-4000-8000-000000000001');
const second = entry('Second entry for the moderators.', 1_700_000_100, 'ffffffff-0000-4000-8000-000000000002');
const PNG = fs.readFileSync(`${DEMO_DIR}/emojis/toast.png`);

describe('admin API', () => {
  let t: TestContext;
  let token: string;
  let auth: Record<string, string>;
  beforeAll(async () => {
    t = await createTestApp({ entries: [first, second] });
    token = (await t.storage.tokens.create('alice'))!;
    auth = { authorization: `Bearer ${token}` };
  });
  afterAll(() => t.close());

  const admin = (method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE', url: string, payload?: unknown, headers: Record<string, string> = {}) =>
    t.app.inject({
      method,
      url: `/api/v1/admin${url}`,
      headers: { ...auth, ...(payload !== undefined && !Buffer.isBuffer(payload) ? { 'content-type': 'application/json' } : {}), ...headers },
      payload: payload === undefined ? undefined : Buffer.isBuffer(payload) ? payload : JSON.stringify(payload),
    });
  const revision = async () => {
    t.storage.cache.invalidate();
    return (await t.app.inject('/api/v1/nonsense/status')).json().revision as number;
  };

  describe('authentication', () => {
    it('answers 401 with WWW-Authenticate without a token or with a wrong one', async () => {
      for (const headers of [{}, { authorization: 'Bearer nst_wrong' }, { authorization: 'Basic YWxpY2U6eA==' }, { authorization: `Bearer ${token}x` }]) {
        const res = await t.app.inject({ method: 'GET', url: '/api/v1/admin/reports', headers });
        expect(res.statusCode).toBe(401);
        expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="nonsense-admin"/);
        expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      }
    });

    it('stops a revoked token at once', async () => {
      const bob = (await t.storage.tokens.create('bob'))!;
      expect((await t.app.inject({ url: '/api/v1/admin/reports', headers: { authorization: `Bearer ${bob}` } })).statusCode).toBe(200);
      expect(await t.storage.tokens.create('bob')).toBeNull();
      expect(await t.storage.tokens.revoke('bob')).toBe(1);
      expect((await t.app.inject({ url: '/api/v1/admin/reports', headers: { authorization: `Bearer ${bob}` } })).statusCode).toBe(401);
    });
  });

  describe('entries', () => {
    it.runIf(process.env.TEST_DATABASE !== 'postgres')('has each write read the pages it touches in a read worker first, and not wait long for that', async () => {
      const warm = vi.spyOn(t.app.readWorkers!, 'warm');
      try {
        const created = (await admin('POST', '/nonsense', { text: 'Warmed before it is written.' })).json();
        expect(warm).toHaveBeenLastCalledWith({ textKey: textKey('Warmed before it is written.') });
        expect((await admin('PATCH', `/nonsense/${created.uuid}`, { state: 'hidden' })).statusCode).toBe(200);
        expect(warm).toHaveBeenLastCalledWith({ uuid: created.uuid });
        expect((await admin('PATCH', `/nonsense/${created.uuid}`, { text: 'Warmed once more.' })).statusCode).toBe(200);
        expect(warm).toHaveBeenLastCalledWith({ uuid: created.uuid, textKey: textKey('Warmed once more.') });
        // A warming read that never ends holds the write a quarter of a second, no more.
        warm.mockImplementation(() => new Promise(() => {}));
        const started = performance.now();
        expect((await admin('DELETE', `/nonsense/${created.uuid}`)).statusCode).toBe(204);
        expect(warm).toHaveBeenLastCalledWith({ uuid: created.uuid });
        expect(performance.now() - started).toBeLessThan(5000);
        expect((await admin('GET', `/nonsense/${created.uuid}`)).statusCode).toBe(404);
      } finally {
        warm.mockRestore();
      }
    });

    it('creates an entry, bumps the revision and logs who did it', async () => {
      const before = await revision();
      const res = await admin('POST', '/nonsense', { text: '  A brand new $ANIMAL$ entry  ', timestamp: 1_700_000_500 });
      expect(res.statusCode).toBe(201);
      const created = res.json();
      expect(created).toEqual({ uuid: expect.any(String), text: 'A brand new $ANIMAL$ entry', state: 'visible', timestamp: 1_700_000_500 });
      expect(await revision()).toBeGreaterThan(before);
      expect((await t.app.inject(`/api/v1/nonsense/${created.uuid}`)).statusCode).toBe(200);
      const log = (await admin('GET', '/log')).json();
      expect(log[0]).toMatchObject({ actor: 'alice', action: 'entry.create', target: created.uuid });
      // Unix seconds, like every time in the API.
      expect(Math.abs(log[0].at - Date.now() / 1000)).toBeLessThan(60);
    });

    it('refuses the same text twice with 409 naming the existing uuid', async () => {
      const res = await admin('POST', '/nonsense', { text: 'FIRST ENTRY FOR THE MODERATORS.' });
      expect(res.statusCode).toBe(409);
      expect(res.json().detail).toContain(first.uuid);
    });

    it.each([
      [{ text: '' }, /empty/],
      [{ text: 'x'.repeat(2001) }, /2001 characters/],
      [{ text: 'bell\u0007' }, /U\+0007/],
      [{ text: 42 }, /must be a string/],
      [{}, /"text" is required/],
      [{ text: 'ok', timestamp: -1 }, /timestamp/],
    ])('answers 400 for the entry %j', async (payload, detail) => {
      const res = await admin('POST', '/nonsense', payload);
      expect(res.statusCode).toBe(400);
      expect(res.json().detail).toMatch(detail);
    });

    it('hides and shows an entry, which disappears from every public endpoint at once', async () => {
      const hide = await admin('PATCH', `/nonsense/${second.uuid}`, { state: 'hidden' });
      expect(hide.statusCode).toBe(200);
      expect(hide.json().state).toBe('hidden');
      expect((await t.app.inject(`/api/v1/nonsense/${second.uuid}`)).statusCode).toBe(404);
      expect((await t.app.inject('/api/v1/nonsense?format=json')).body).not.toContain(second.uuid);
      for (let i = 0; i < 50; i++) expect((await t.app.inject('/api/v1/nonsense/random')).json().uuid).not.toBe(second.uuid);
      expect((await admin('GET', `/nonsense/${second.uuid}`)).json().state).toBe('hidden');
      expect((await admin('PATCH', `/nonsense/${second.uuid}`, { state: 'visible' })).json().state).toBe('visible');
      expect((await t.app.inject(`/api/v1/nonsense/${second.uuid}`)).statusCode).toBe(200);
      const actions = (await admin('GET', '/log?limit=2')).json().map((r: { action: string }) => r.action);
      expect(actions).toEqual(['entry.show', 'entry.hide']);
    });

    it('edits the text, refusing a duplicate', async () => {
      const res = await admin('PATCH', `/nonsense/${second.uuid}`, { text: 'Second entry, edited.' });
      expect(res.json()).toMatchObject({ text: 'Second entry, edited.', state: 'visible' });
      expect((await t.app.inject(`/api/v1/nonsense/${second.uuid}`)).json().nonsense).toBe('Second entry, edited.');
      expect((await admin('PATCH', `/nonsense/${second.uuid}`, { text: first.text })).statusCode).toBe(409);
      expect((await admin('PATCH', `/nonsense/${second.uuid}`, { state: 'gone' })).statusCode).toBe(400);
      expect((await admin('PATCH', `/nonsense/${second.uuid}`, {})).statusCode).toBe(400);
      expect((await admin('PATCH', '/nonsense/ffffffff-0000-4000-8000-00000000ffff', { state: 'hidden' })).statusCode).toBe(404);
      expect((await admin('PATCH', '/nonsense/nope', { state: 'hidden' })).statusCode).toBe(400);
    });

    it('deletes an entry', async () => {
      const created = (await admin('POST', '/nonsense', { text: 'Short-lived.' })).json();
      expect((await admin('DELETE', `/nonsense/${created.uuid}`)).statusCode).toBe(204);
      expect((await admin('DELETE', `/nonsense/${created.uuid}`)).statusCode).toBe(404);
      expect((await t.app.inject(`/api/v1/nonsense/${created.uuid}`)).statusCode).toBe(404);
    });

    it('answers 415 for a body that is not JSON', async () => {
      const res = await admin('POST', '/nonsense', undefined, { 'content-type': 'text/plain' });
      expect([400, 415]).toContain(res.statusCode);
      const plain = await t.app.inject({ method: 'POST', url: '/api/v1/admin/nonsense', headers: { ...auth, 'content-type': 'text/plain' }, payload: 'text=hi' });
      expect(plain.statusCode).toBe(415);
    });
  });

  describe('variables', () => {
    const url = `/variables/${encodeURIComponent('$COLOUR$')}`;

    it('creates (201), replaces (200) and deletes (204) a server variable used at once', async () => {
      const created = (await admin('POST', '/nonsense', { text: 'A $COLOUR$ sock.' })).json();
      expect((await t.app.inject(`/api/v1/nonsense/${created.uuid}`)).json().nonsense).toBe('A $COLOUR$ sock.');
      const put = await admin('PUT', url, { description: 'A colour.', values: ['teal'] });
      expect(put.statusCode).toBe(201);
      expect(put.json()).toEqual({ name: '$COLOUR$', scope: 'server', description: 'A colour.', values: ['teal'] });
      expect((await t.app.inject(`/api/v1/nonsense/${created.uuid}`)).json()).toMatchObject({ nonsense: 'A teal sock.', original_nonsense: 'A $COLOUR$ sock.' });
      expect((await admin('PUT', url, { description: 'A colour.', values: ['mauve'] })).statusCode).toBe(200);
      expect((await t.app.inject(`/api/v1/nonsense/${created.uuid}`)).json().nonsense).toBe('A mauve sock.');
      expect((await admin('DELETE', url)).statusCode).toBe(204);
      expect((await admin('DELETE', url)).statusCode).toBe(404);
    });

    it.each([
      ['$author$', { description: 'x', values: ['a'] }, /not a variable name/],
      ['$AUTHOR$', { description: 'x', values: ['a'] }, /client-side variable/],
      ['$OK$', { description: 'x', values: [] }, /list of 1 to/],
      ['$OK$', { description: 'x', values: ['two\nlines'] }, /single line/],
      ['$OK$', { description: 'x', values: ['a'.repeat(201)] }, /"values\[0\]" has 201 characters; at most 200/],
      ['$OK$', { values: ['a'] }, /"description" is required/],
    ])('answers 400 for %s %j', async (name, payload, detail) => {
      const res = await admin('PUT', `/variables/${encodeURIComponent(name)}`, payload);
      expect(res.statusCode).toBe(400);
      expect(res.json().detail).toMatch(detail);
    });
  });

  describe('emojis', () => {
    it('accepts an image checked by its content and serves it', async () => {
      const put = await admin('PUT', '/emojis/toasty', PNG, { 'content-type': 'image/png' });
      expect(put.statusCode).toBe(201);
      expect(put.json()).toEqual({ name: 'toasty', code: ':toasty:', contentType: 'image/png' });
      const list = (await t.app.inject('/api/v1/emojis')).json();
      expect(list.map((e: { name: string }) => e.name)).toContain('toasty');
      const image = await t.app.inject('/api/v1/emojis/toasty.png');
      expect(image.rawPayload.equals(PNG)).toBe(true);
      expect((await admin('PUT', '/emojis/toasty', PNG, { 'content-type': 'image/png' })).statusCode).toBe(200);
      expect((await admin('DELETE', '/emojis/toasty')).statusCode).toBe(204);
      expect((await t.app.inject('/api/v1/emojis/toasty.png')).statusCode).toBe(404);
    });

    it('rejects bodies that are not what they claim, too large, or of another type', async () => {
      const fakePng = Buffer.concat([Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>')]);
      expect((await admin('PUT', '/emojis/fake', fakePng, { 'content-type': 'image/png' })).json().detail).toMatch(/not a PNG, GIF or WebP/);
      const gifHeader = Buffer.from('GIF89a\x01\x00\x01\x00', 'latin1');
      expect((await admin('PUT', '/emojis/fake', gifHeader, { 'content-type': 'image/png' })).json().detail).toMatch(/image\/gif image, but the request says image\/png/);
      const truncated = PNG.subarray(0, 12);
      expect((await admin('PUT', '/emojis/fake', truncated, { 'content-type': 'image/png' })).statusCode).toBe(400);
      const huge = Buffer.concat([PNG, Buffer.alloc(300 * 1024)]);
      expect((await admin('PUT', '/emojis/fake', huge, { 'content-type': 'image/png' })).statusCode).toBe(413);
      expect((await admin('PUT', '/emojis/fake', PNG, { 'content-type': 'image/jpeg' })).statusCode).toBe(415);
      expect((await admin('PUT', '/emojis/Bad-Name', PNG, { 'content-type': 'image/png' })).statusCode).toBe(400);
    });
  });

  describe('reports', () => {
    it('lists open reports with their entries; accepting hides the entry and accepts the other open reports on it', async () => {
      const fileReport = async (uuid: string, reason: string) =>
        (await t.app.inject({ method: 'POST', url: '/api/v1/nonsense/report', headers: { 'content-type': 'application/json' }, payload: { entryUuid: uuid, reason } })).json().id as string;
      const a = await fileReport(first.uuid, 'duplicate');
      const b = await fileReport(first.uuid, 'other');
      const c = await fileReport(second.uuid, 'other');
      const open = (await admin('GET', '/reports')).json();
      // Oldest first; reports filed within the same millisecond may come in any order.
      expect(open.map((r: { id: string }) => r.id).sort()).toEqual([a, b, c].sort());
      const times = open.map((r: { createdAt: number }) => r.createdAt);
      expect(times).toEqual([...times].sort((x: number, y: number) => x - y));
      for (const time of times) expect(Math.abs(time - Date.now() / 1000)).toBeLessThan(60);
      expect(open.find((r: { id: string }) => r.id === a)).toMatchObject({ entryUuid: first.uuid, reason: 'duplicate', status: 'open', entry: { uuid: first.uuid, text: first.text, state: 'visible' } });

      const accepted = await admin('POST', `/reports/${a}/accept`);
      expect(accepted.statusCode).toBe(200);
      expect(accepted.json()).toMatchObject({ id: a, status: 'accepted', resolvedBy: 'alice' });
      expect((await t.app.inject(`/api/v1/nonsense/${first.uuid}`)).statusCode).toBe(404);
      expect((await admin('GET', '/reports')).json().map((r: { id: string }) => r.id)).toEqual([c]);
      expect((await admin('GET', '/reports?status=accepted')).json().map((r: { id: string }) => r.id).sort()).toEqual([a, b].sort());
      expect((await admin('POST', `/reports/${b}/accept`)).statusCode).toBe(409);

      const dismissed = await admin('POST', `/reports/${c}/dismiss`);
      expect(dismissed.json()).toMatchObject({ id: c, status: 'dismissed' });
      expect((await t.app.inject(`/api/v1/nonsense/${second.uuid}`)).statusCode).toBe(200);
      expect((await admin('POST', '/reports/00000000-0000-4000-8000-000000000000/dismiss')).statusCode).toBe(404);
      expect((await admin('GET', '/reports?status=nope')).statusCode).toBe(400);
      const log = (await admin('GET', '/log?limit=2')).json();
      expect(log.map((r: { action: string }) => r.action)).toEqual(['report.dismiss', 'report.accept']);
    });

    it('lists reports a page at a time, the next page in a Link header, oldest first', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const filed = await t.app.inject({ method: 'POST', url: '/api/v1/nonsense/report', headers: { 'content-type': 'application/json' }, payload: { entryUuid: second.uuid, reason: 'other', details: `Page ${i}` } });
        ids.push(filed.json().id);
      }
      const seen: string[] = [];
      const times: number[] = [];
      let url: string | null = '/api/v1/admin/reports?limit=2';
      let pages = 0;
      while (url !== null) {
        const res = await t.app.inject({ url, headers: auth });
        expect(res.statusCode).toBe(200);
        const page = res.json() as { id: string; createdAt: number }[];
        expect(Array.isArray(page)).toBe(true);
        expect(page.length).toBeLessThanOrEqual(2);
        seen.push(...page.map((r) => r.id));
        times.push(...page.map((r) => r.createdAt));
        const link = res.headers.link as string | undefined;
        url = link === undefined ? null : (() => {
          const next = new URL(/^<(.+)>; rel="next"$/.exec(link)![1]!);
          expect(next.searchParams.get('limit')).toBe('2');
          return next.pathname + next.search;
        })();
        pages++;
      }
      expect(pages).toBe(3);
      // Oldest first; reports of the same millisecond follow their ids, so only the times are compared.
      expect(times).toEqual([...times].sort((a, b) => a - b));
      expect(new Set(seen).size).toBe(seen.length);
      expect(seen.sort()).toEqual([...ids].sort());
      // Without a limit: 100 a page, so all five at once, and no Link.
      const all = await admin('GET', '/reports');
      expect(all.json()).toHaveLength(5);
      expect(all.headers.link).toBeUndefined();
      for (const query of ['limit=0', 'limit=1001', 'cursor=nope', 'cursor=1.00000000-0000-4000-8000-00000000000g']) {
        const res = await admin('GET', `/reports?${query}`);
        expect(res.statusCode, query).toBe(400);
        expect(res.json().parameter).toBe(query.split('=')[0]);
      }
    });
  });
});
