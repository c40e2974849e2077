/**
 * The change log and its two readers: `changes` (pages) and `events` (Server-Sent Events), on the
 * engine of the project (SQLite, PostgreSQL).
 */
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { openDatabase } from '../../src/db/database.ts';
import { DEMO_DIR } from '../../src/demo/load-demo.ts';
import { ChangeStore } from '../../src/storage/changes.ts';
import { createStorage } from '../../src/storage/index.ts';
import { openEvents, type EventReader } from '../events/sse-client.ts';
import { createTestApp, entry, type TestContext } from '../helper.ts';

const PNG = fs.readFileSync(`${DEMO_DIR}/emojis/toast.png`);
const ANIMAL = { name: '$ANIMAL$', description: 'An animal.', values: ['cat', 'goose'] };

async function listen(t: TestContext): Promise<string> {
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
}

describe('the change log', () => {
  let t: TestContext;
  let auth: Record<string, string>;
  let start: number;
  const admin = (method: string, path: string, payload?: unknown, headers: Record<string, string> = {}) =>
    t.app.inject({ method: method as 'GET', url: `/api/v1/admin${path}`, headers: { ...auth, ...headers }, payload: payload as string });
  const changes = (query: string) => t.app.inject(`/api/v1/nonsense/changes?${query}`);

  beforeAll(async () => {
    t = await createTestApp({ variables: [ANIMAL], entries: [entry('Already there before the copy.', 1_700_000_000, 'cccccccc-0000-4000-8000-000000000001')] });
    auth = { authorization: `Bearer ${(await t.storage.tokens.create('alice'))!}` };
    start = (await t.app.inject('/api/v1/nonsense/status')).json().revision;
  });
  afterAll(() => t.close());

  it('records every public change of the admin API, each at a revision of its own, as the status counts', async () => {
    const created = (await admin('POST', '/nonsense', { text: 'The $ANIMAL$ is logged.', timestamp: 1_700_000_500 })).json();
    const uuid = created.uuid as string;
    expect((await admin('PATCH', `/nonsense/${uuid}`, { text: 'The $ANIMAL$ is edited.' })).statusCode).toBe(200);
    expect((await admin('PATCH', `/nonsense/${uuid}`, { state: 'hidden' })).statusCode).toBe(200);
    // Edited while hidden: nothing the public sees, until it is shown again with that text.
    expect((await admin('PATCH', `/nonsense/${uuid}`, { text: 'Edited while hidden.' })).statusCode).toBe(200);
    expect((await admin('PATCH', `/nonsense/${uuid}`, { state: 'visible' })).statusCode).toBe(200);
    expect((await admin('PUT', '/variables/%24COLOUR%24', { description: 'A colour.', values: ['red'] })).statusCode).toBe(201);
    expect((await admin('DELETE', '/variables/%24COLOUR%24')).statusCode).toBe(204);
    expect((await admin('PUT', '/emojis/toasty', PNG, { 'content-type': 'image/png' })).statusCode).toBe(201);
    expect((await admin('DELETE', '/emojis/toasty')).statusCode).toBe(204);
    const report = (await t.app.inject({ method: 'POST', url: '/api/v1/nonsense/report', payload: { entryUuid: uuid, reason: 'other' } })).json();
    expect((await admin('POST', `/reports/${report.id}/accept`)).statusCode).toBe(200);
    expect((await admin('PATCH', `/nonsense/${uuid}`, { state: 'visible' })).statusCode).toBe(200);
    expect((await admin('DELETE', `/nonsense/${uuid}`)).statusCode).toBe(204);

    const res = await changes(`since=${start}`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    const body = res.json();
    const status = (await t.app.inject('/api/v1/nonsense/status')).json();
    expect(body.revision).toBe(status.revision);
    expect(body.changes.map((c: { type: string; key: string }) => [c.type, c.key])).toEqual([
      ['entry.created', uuid],
      ['entry.updated', uuid],
      ['entry.hidden', uuid],
      ['entry.restored', uuid],
      ['variable.updated', '$COLOUR$'],
      ['variable.deleted', '$COLOUR$'],
      ['emoji.updated', 'toasty'],
      ['emoji.deleted', 'toasty'],
      ['entry.hidden', uuid],
      ['entry.restored', uuid],
      ['entry.deleted', uuid],
    ]);
    const revisions = body.changes.map((c: { revision: number }) => c.revision);
    expect(revisions).toEqual([...revisions].sort((a, b) => a - b));
    expect(new Set(revisions).size).toBe(revisions.length);
    // One revision per change, and one for the hidden entry's edit, which changed nothing public.
    expect(status.revision - start).toBe(revisions.length + 1);
    const [createdChange, updated, hidden, restored] = body.changes;
    expect(createdChange.entry).toEqual({ uuid, nonsense: expect.stringMatching(/^The (cat|goose) is logged\.$/), original_nonsense: 'The $ANIMAL$ is logged.', timestamp: 1_700_000_500 });
    expect(updated.entry.original_nonsense).toBe('The $ANIMAL$ is edited.');
    expect(hidden.entry).toBeUndefined();
    expect(restored.entry).toEqual({ uuid, nonsense: 'Edited while hidden.', timestamp: 1_700_000_500 });
    expect(Math.abs(createdChange.at - Date.now() / 1000)).toBeLessThan(60);
  });

  it('pages with Link, revalidates with ETag, and answers HEAD', async () => {
    const all = (await changes(`since=${start}&limit=1000`)).json().changes as { revision: number }[];
    const first = await changes(`since=${start}&limit=4`);
    expect(first.json().changes).toEqual(all.slice(0, 4));
    const link = /^<([^>]+)>; rel="next"$/.exec(first.headers.link as string)![1]!;
    const next = new URL(link);
    expect(next.searchParams.get('since')).toBe(String(all[3]!.revision));
    expect(next.searchParams.get('limit')).toBe('4');
    const second = await t.app.inject(next.pathname + next.search);
    expect(second.json().changes).toEqual(all.slice(4, 8));
    const last = await changes(`since=${all.at(-1)!.revision}`);
    expect(last.json().changes).toEqual([]);
    expect(last.headers.link).toBeUndefined();

    const etag = first.headers.etag as string;
    expect(etag).toMatch(/^W\/"r\d+-/);
    const again = await t.app.inject({ url: `/api/v1/nonsense/changes?since=${start}&limit=4`, headers: { 'if-none-match': etag } });
    expect(again.statusCode).toBe(304);
    const head = await t.app.inject({ method: 'HEAD', url: `/api/v1/nonsense/changes?since=${start}&limit=4` });
    expect(head.statusCode).toBe(200);
    expect(head.body).toBe('');
    expect(head.headers.etag).toBe(etag);
    expect(head.headers.link).toBe(first.headers.link);
  });

  it('refuses a since ahead of the revision (400) and one older than the log (410)', async () => {
    const revision = (await t.app.inject('/api/v1/nonsense/status')).json().revision as number;
    const ahead = await changes(`since=${revision + 5}`);
    expect(ahead.statusCode).toBe(400);
    expect(ahead.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(ahead.json()).toMatchObject({ parameter: 'since', detail: expect.stringContaining(`${revision + 5}`) });
    const bad = await changes('since=-1');
    expect(bad.statusCode).toBe(400);
    expect(bad.json().parameter).toBe('since');
    expect((await changes(`since=${start}&limit=1001`)).json().parameter).toBe('limit');

    const store = new ChangeStore(t.storage.database.db);
    // Keep the newest two: the floor moves to the revision before them.
    expect(await store.prune(30, 2, 3)).toBeGreaterThan(0);
    const kept = (await changes(`since=${await store.floor()}`)).json().changes;
    expect(kept).toHaveLength(2);
    const gone = await changes(`since=${start}`);
    expect(gone.statusCode).toBe(410);
    expect(gone.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(gone.json().detail).toMatch(/format=json/);
  });
});

describe('the event stream', () => {
  let t: TestContext;
  let url: string;
  let auth: Record<string, string>;
  const readers: EventReader[] = [];
  const open = async (path: string, headers?: Record<string, string>, localAddress?: string) => {
    const reader = await openEvents(`${url}${path}`, headers, localAddress);
    readers.push(reader);
    return reader;
  };
  const create = async (text: string) => {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/admin/nonsense', headers: auth, payload: { text } });
    expect(res.statusCode).toBe(201);
    return res.json().uuid as string;
  };

  beforeAll(async () => {
    t = await createTestApp({ env: { EVENTS_MAX_STREAMS: '6', EVENTS_MAX_STREAMS_PER_CLIENT: '3' } });
    auth = { authorization: `Bearer ${(await t.storage.tokens.create('alice'))!}` };
    url = await listen(t);
  });
  afterAll(async () => {
    for (const reader of readers) reader.close();
    await t.close();
  });

  it('delivers an admin change to an open stream within a second, and resumes with Last-Event-ID', async () => {
    const reader = await open('/api/v1/nonsense/events');
    expect(reader.status).toBe(200);
    expect(reader.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(reader.headers['access-control-allow-origin']).toBe('*');
    const before = performance.now();
    const uuid = await create('Streamed at once.');
    const event = await reader.next((e) => e.event === 'entry.created', 1000);
    expect(event.at - before).toBeLessThan(1000);
    const change = JSON.parse(event.data);
    expect(change).toMatchObject({ type: 'entry.created', key: uuid, entry: { uuid, nonsense: 'Streamed at once.' } });
    expect(event.id).toBe(String(change.revision));

    await t.app.inject({ method: 'PATCH', url: `/api/v1/admin/nonsense/${uuid}`, headers: auth, payload: { state: 'hidden' } });
    await reader.next((e) => e.event === 'entry.hidden');
    const resumed = await open('/api/v1/nonsense/events', { 'last-event-id': event.id! });
    const replay = await resumed.next((e) => e.event === 'entry.hidden');
    expect(resumed.events[0]).toBe(replay);
    const bySince = await open(`/api/v1/nonsense/events?since=${Number(event.id) - 1}`);
    await bySince.next((e) => e.event === 'entry.hidden');
    expect(bySince.events.map((e) => e.event)).toEqual(['entry.created', 'entry.hidden']);
    for (const r of [reader, resumed, bySince]) r.close();
  });

  it('reaches a stream with a change written by another connection to the database within a second', async () => {
    const reader = await open('/api/v1/nonsense/events');
    const other = await openDatabase(t.config.database);
    try {
      const storage = createStorage(other);
      const before = performance.now();
      await storage.entries.insertEntries([entry('Written by another connection.', 1_700_000_000, 'cccccccc-0000-4000-8000-0000000000aa')]);
      const event = await reader.next((e) => e.event === 'entry.created' && e.data.includes('another connection'), 1500);
      expect(event.at - before).toBeLessThan(1000);
    } finally {
      await other.close();
      reader.close();
    }
  });

  it('answers a resume from before the log with one reset event and the end, and one ahead with 400', async () => {
    const store = new ChangeStore(t.storage.database.db);
    await create('One more, so the log has something to prune.');
    await create('And another.');
    await store.prune(30, 1);
    const floor = await store.floor();
    const reader = await open('/api/v1/nonsense/events', { 'last-event-id': String(floor - 1) });
    await reader.ended;
    expect(reader.events.map((e) => e.event)).toEqual(['reset']);
    expect(JSON.parse(reader.events[0]!.data).detail).toMatch(/format=json/);
    const revision = (await t.app.inject('/api/v1/nonsense/status')).json().revision as number;
    const ahead = await open('/api/v1/nonsense/events', { 'last-event-id': String(revision + 10) });
    expect(ahead.status).toBe(400);
    const head = await t.app.inject({ method: 'HEAD', url: '/api/v1/nonsense/events' });
    expect(head.statusCode).toBe(200);
    expect(head.headers['content-type']).toBe('text/event-stream; charset=utf-8');
  });

  it('caps streams per address (429) and in total (503), and counts them in /metrics', async () => {
    const mine = [await open('/api/v1/nonsense/events', {}, '127.0.0.2'), await open('/api/v1/nonsense/events', {}, '127.0.0.2'), await open('/api/v1/nonsense/events', {}, '127.0.0.2')];
    expect(mine.map((r) => r.status)).toEqual([200, 200, 200]);
    const fourth = await open('/api/v1/nonsense/events', {}, '127.0.0.2');
    expect(fourth.status).toBe(429);
    expect(fourth.headers['retry-after']).toBeDefined();
    const others = [await open('/api/v1/nonsense/events', {}, '127.0.0.3'), await open('/api/v1/nonsense/events', {}, '127.0.0.3'), await open('/api/v1/nonsense/events', {}, '127.0.0.3')];
    expect(others.map((r) => r.status)).toEqual([200, 200, 200]);
    const full = await open('/api/v1/nonsense/events', {}, '127.0.0.4');
    expect(full.status).toBe(503);
    const metrics = (await t.app.inject('/metrics')).body;
    expect(metrics).toMatch(/^nonsense_event_streams [1-9]\d*$/m);
    expect(metrics).toMatch(/^nonsense_event_streams_refused_total\{budget="per_client"\} [1-9]/m);
    for (const r of [...mine, ...others]) r.close();
    await expect.poll(async () => /^nonsense_event_streams 0$/m.test((await t.app.inject('/metrics')).body), { timeout: 5000 }).toBe(true);
    // A stream that ended is counted like any other request.
    const requests = (await t.app.inject('/metrics')).body.split('\n').filter((l) => l.startsWith('http_requests_total{') && l.includes('"/api/v1/nonsense/events"'));
    expect(requests.some((l) => l.includes('"200"'))).toBe(true);
    expect(requests.some((l) => l.includes('"429"'))).toBe(true);
  });

  it('cuts a client that does not read off with a final overflow event instead of buffering', async () => {
    const slow = await open('/api/v1/nonsense/events');
    const fast = await open('/api/v1/nonsense/events');
    slow.response.pause();
    const cuts = async () => Number(/^nonsense_event_streams_cut_total\{reason="overflow"\} (\d+)$/m.exec((await t.app.inject('/metrics')).body)?.[1] ?? 0);
    const before = await cuts();
    // Up to about 24 MB of events, more than the socket buffers of both ends hold, in batches the reader keeps up with.
    const long = 'x'.repeat(1990);
    let batch = 0;
    for (; batch < 60 && (await cuts()) === before; batch++) {
      await t.storage.entries.insertEntries(
        Array.from({ length: 200 }, (_, i) => entry(`${long} ${batch}-${i}`, 1_700_000_000, `eeeeeeee-0000-4000-8${String(batch).padStart(3, '0')}-${String(i).padStart(12, '0')}`)),
      );
      await fast.next((e) => e.event === 'entry.created' && e.data.includes(` ${batch}-199"`), 10_000);
    }
    expect(await cuts()).toBe(before + 1);
    slow.response.resume();
    await slow.ended;
    expect(slow.events.at(-1)!.event).toBe('overflow');
    expect(slow.events.filter((e) => e.event === 'entry.created').length).toBeLessThan(batch * 200);
    expect(fast.events.filter((e) => e.event === 'overflow')).toEqual([]);
  }, 60_000);
});

describe('two instances on one database', () => {
  it("deliver each other's changes to their streams within a second", async () => {
    const a = await createTestApp();
    const config = loadConfig({ DATABASE_URL: a.config.database.engine === 'postgres' ? a.config.database.url : a.config.database.file, LOG_LEVEL: 'silent' });
    const database = await openDatabase(config.database);
    const { buildApp } = await import('../../src/app.ts');
    const b = await buildApp({ config, storage: createStorage(database), logger: false, readWorkers: false });
    try {
      const url = await listen(a);
      const reader = await openEvents(`${url}/api/v1/nonsense/events`);
      const token = (await b.storage.tokens.create('bob'))!;
      const before = performance.now();
      const res = await b.inject({ method: 'POST', url: '/api/v1/admin/nonsense', headers: { authorization: `Bearer ${token}` }, payload: { text: 'From the other instance.' } });
      expect(res.statusCode).toBe(201);
      const event = await reader.next((e) => e.event === 'entry.created', 1500);
      expect(event.at - before).toBeLessThan(1000);
      reader.close();
    } finally {
      await b.close();
      await database.close();
      await a.close();
    }
  });
});
