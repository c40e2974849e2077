/**
 * The public API through the typed client generated from /openapi.json (openapi-typescript +
 * openapi-fetch), as a client author would use it: every public operation, with the types the
 * document gives. Each answer is also checked against the document by the test app.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestContext } from '../helper.ts';
import { apiClient, type ApiClient } from './client.ts';

describe('the public API through the generated client', () => {
  let t: TestContext;
  let api: ApiClient;
  let known: { uuid: string; timestamp: number };
  beforeAll(async () => {
    t = await createTestApp({ demo: true });
    api = apiClient(t.app);
    const first = await api.GET('/api/v1/nonsense', { params: { query: { format: 'json' } } });
    known = first.data![0]!;
  });
  afterAll(() => t.close());

  it('reads a random entry and the status, and revalidates the status', async () => {
    const random = await api.GET('/api/v1/nonsense/random');
    expect(random.response.status).toBe(200);
    expect(random.data!.uuid).toMatch(/^[0-9a-f-]{36}$/);
    const status = await api.GET('/api/v1/nonsense/status');
    expect(status.data!.count).toBeGreaterThanOrEqual(300);
    const etag = status.response.headers.get('etag')!;
    const again = await api.GET('/api/v1/nonsense/status', { headers: { 'if-none-match': etag } });
    expect(again.response.status).toBe(304);
  });

  it('reads an entry by UUID, and gets typed problems for a bad or unknown one', async () => {
    const found = await api.GET('/api/v1/nonsense/{id}', { params: { path: { id: known.uuid.toUpperCase() } } });
    expect(found.data).toMatchObject({ uuid: known.uuid, timestamp: known.timestamp });
    const bad = await api.GET('/api/v1/nonsense/{id}', { params: { path: { id: 'not-a-uuid' } } });
    expect(bad.response.status).toBe(400);
    expect(bad.error).toMatchObject({ status: 400, parameter: 'id' });
    const unknown = await api.GET('/api/v1/nonsense/{id}', { params: { path: { id: '00000000-0000-4000-8000-00000000dead' } } });
    expect(unknown.error).toMatchObject({ status: 404, detail: 'No entry has the UUID 00000000-0000-4000-8000-00000000dead.' });
    const jpeg = await api.GET('/api/v1/nonsense/{id}', { params: { path: { id: `${known.uuid}.jpg` } } });
    expect(jpeg.error?.detail).toContain('PNG only');
  });

  it('follows the changes from the status revision, and hears why a revision ahead of it is refused', async () => {
    const status = (await api.GET('/api/v1/nonsense/status')).data!;
    const since = status.revision - 5;
    const page = await api.GET('/api/v1/nonsense/changes', { params: { query: { since, limit: 2 } } });
    expect(page.data!.revision).toBe(status.revision);
    const revisions = page.data!.changes.map((change) => change.revision);
    expect(revisions).toHaveLength(2);
    expect(revisions[0]).toBeGreaterThan(since);
    expect(revisions[1]).toBeGreaterThan(revisions[0]!);
    expect(page.response.headers.get('link')).toMatch(/rel="next"/);
    const ahead = await api.GET('/api/v1/nonsense/events', { params: { query: { since: status.revision + 1 } } });
    expect(ahead.error).toMatchObject({ status: 400, parameter: 'since' });
  });

  it('gets the share image from its own path', async () => {
    const png = await api.GET('/api/v1/nonsense/{id}.png', { params: { path: { id: known.uuid } }, parseAs: 'arrayBuffer' });
    expect(png.response.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(png.data!).subarray(1, 4).toString()).toBe('PNG');
  });

  it('lists emojis with their images, and variables', async () => {
    const emojis = await api.GET('/api/v1/emojis');
    expect(emojis.data!.length).toBeGreaterThanOrEqual(5);
    const emoji = emojis.data![0]!;
    const file = new URL(emoji.url).pathname.split('/').at(-1)!;
    const image = await api.GET('/api/v1/emojis/{file}', { params: { path: { file } }, parseAs: 'arrayBuffer' });
    expect(image.response.status).toBe(200);
    expect(image.response.headers.get('content-type')).toMatch(/^image\//);
    const variables = await api.GET('/api/v1/variables');
    expect(variables.data!.filter((v) => v.scope === 'client').map((v) => v.name)).toEqual(expect.arrayContaining(['$AUTHOR$', '${app_name}']));
    expect(variables.data!.filter((v) => v.scope === 'server').every((v) => (v.values?.length ?? 0) > 0)).toBe(true);
  });

  it('exports as JSON, CSV and TXT with typed filters', async () => {
    const after = known.timestamp - 1;
    const json = await api.GET('/api/v1/nonsense', { params: { query: { format: 'json', after, before: known.timestamp + 1 } } });
    expect(json.data!.map((e) => e.uuid)).toContain(known.uuid);
    const csv = await api.GET('/api/v1/nonsense', { params: { query: { format: 'csv', q: 'a' } }, parseAs: 'text' });
    expect(csv.data!.startsWith('uuid,nonsense,original_nonsense,timestamp\r\n')).toBe(true);
    const txt = await api.GET('/api/v1/nonsense', { params: { query: { format: 'txt' } }, parseAs: 'text' });
    expect(txt.data!.endsWith('\n')).toBe(true);
    // A value the types do not allow, as an untyped caller might send it.
    const wrong = await api.GET('/api/v1/nonsense', { params: { query: { format: 'xml' as 'csv' } } });
    expect(wrong.error).toMatchObject({ status: 400, parameter: 'format' });
  });

  it('reports an entry, and gets the field named when the body is wrong', async () => {
    const filed = await api.POST('/api/v1/nonsense/report', { body: { entryUuid: known.uuid, reason: 'duplicate' } });
    expect(filed.response.status).toBe(201);
    expect(filed.data).toMatchObject({ entryUuid: known.uuid, reason: 'duplicate', status: 'open' });
    const refused = await api.POST('/api/v1/nonsense/report', { body: { entryUuid: known.uuid, reason: 'other', details: 'x'.repeat(1001) } });
    expect(refused.error).toMatchObject({ status: 400, field: 'details', detail: 'The field "details" has 1001 characters; at most 1000 are allowed.' });
  });

  it('answers health, readiness and the OData service', async () => {
    expect((await api.GET('/healthz')).data).toEqual({ status: 'ok' });
    expect((await api.GET('/readyz')).data).toEqual({ status: 'ok' });
    const service = await api.GET('/odata/v2', { params: { query: { $format: 'json' } } });
    expect(service.data).toEqual({ d: { EntitySets: ['nonsense_list'] } });
    const count = await api.GET('/odata/v2/nonsense_list/$count', { parseAs: 'text' });
    expect(Number(count.data)).toBeGreaterThanOrEqual(300);
  });
});
