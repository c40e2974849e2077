/**
 * The check that holds every answer of the test suite to /openapi.json finds what it must: undeclared
 * statuses, media types and bodies, wrong 405s, answers at undocumented paths. Fed the real document
 * and made-up answers; and installed by createTestApp, it fails an inject whose answer is undeclared.
 */
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkAnswersAgainstDocument, createTestApp, entry, type TestContext } from '../helper.ts';
import { DocumentCheck, type Answer, type OpenApiDocument } from './document-check.ts';

const one = entry('Checked entry.', 1_700_000_000, 'ffffffff-0000-4000-8000-000000000001');

/** A made-up answer, with the request id every routed answer carries unless `headers` leaves it out (`undefined`). */
function answer(statusCode: number, type: string | undefined, body: string | Buffer, headers: Record<string, string | undefined> = {}): Answer {
  const raw = Buffer.isBuffer(body) ? body : Buffer.from(body);
  const all = { 'x-request-id': 'test-1', ...(type === undefined ? {} : { 'content-type': type }), ...headers };
  return { statusCode, headers: Object.fromEntries(Object.entries(all).filter(([, value]) => value !== undefined)), body: raw.toString(), rawPayload: raw };
}

const problem = (status: number) => JSON.stringify({ type: 'about:blank', title: 'x', status, detail: 'x' });
const ENTRY = JSON.stringify({ uuid: one.uuid, nonsense: 'x', timestamp: 1 });

describe('the document check', () => {
  let t: TestContext;
  let check: DocumentCheck;
  beforeAll(async () => {
    t = await createTestApp({ entries: [one] });
    check = new DocumentCheck((await t.app.inject('/openapi.json')).json<OpenApiDocument>());
  });
  afterAll(() => t.close());

  it('finds the documented path of a request, the most specific first', () => {
    expect(check.pathOf('/api/v1/nonsense/random')).toBe('/api/v1/nonsense/random');
    expect(check.pathOf(`/api/v1/nonsense/${one.uuid}`)).toBe('/api/v1/nonsense/{id}');
    expect(check.pathOf(`/api/v1/nonsense/${one.uuid}.png`)).toBe('/api/v1/nonsense/{id}.png');
    expect(check.pathOf('/api/v1/nonsense/report')).toBe('/api/v1/nonsense/report');
    expect(check.pathOf('/odata/v2/')).toBe('/odata/v2/');
    expect(check.pathOf('/odata/v2')).toBe('/odata/v2');
    expect(check.pathOf('/api/v1/nonsense/status/')).toBe('/api/v1/nonsense/status');
    expect(check.pathOf(`/odata/v2/nonsense_list(guid%27${one.uuid}%27)`)).toBe("/odata/v2/nonsense_list(guid'{uuid}')");
    expect(check.pathOf('/api/v1/nothing/here')).toBeNull();
  });

  it('accepts declared answers', () => {
    expect(check.problems('GET', '/api/v1/nonsense/random', answer(200, 'application/json; charset=utf-8', ENTRY))).toEqual([]);
    expect(check.problems('GET', '/api/v1/nonsense/random', answer(404, 'application/problem+json; charset=utf-8', problem(404)))).toEqual([]);
    const exported = (format: string) => ({ 'content-disposition': `attachment; filename="nonsense.${format}"` });
    expect(check.problems('GET', '/api/v1/nonsense?format=csv', answer(200, 'text/csv; charset=utf-8', 'uuid,nonsense,original_nonsense,timestamp\r\n', exported('csv')))).toEqual([]);
    expect(check.problems('GET', '/api/v1/nonsense/status', answer(304, undefined, ''))).toEqual([]);
    expect(check.problems('HEAD', '/api/v1/nonsense/random', answer(200, 'application/json; charset=utf-8', ''))).toEqual([]);
    expect(check.problems('GET', '/api/v1/nonsense/report', answer(405, 'application/problem+json', problem(405), { allow: 'POST' }))).toEqual([]);
    expect(check.problems('GET', '/nonsense/anything', answer(418, 'text/html', '<p>'))).toEqual([]);
    // Declared headers, with values their schemas take.
    const limited = { etag: 'W/"r3"', 'cache-control': 'no-cache', 'ratelimit-limit': '100', 'ratelimit-remaining': '99', 'ratelimit-reset': '60' };
    expect(check.problems('GET', '/api/v1/nonsense/status', answer(200, 'application/json', JSON.stringify({ count: 1, latest_timestamp: 1, latest_uuid: one.uuid, revision: 3 }), limited))).toEqual([]);
    expect(check.problems('GET', '/api/v1/nonsense?format=csv', answer(200, 'text/csv', 'uuid,nonsense,original_nonsense,timestamp\r\n', { ...exported('csv'), 'ratelimit-limit': '10' }))).toEqual([]);
    expect(check.problems('GET', '/api/v1/admin/log', answer(401, 'application/problem+json', problem(401), { 'www-authenticate': 'Bearer realm="nonsense-admin"', 'cache-control': 'no-store' }))).toEqual([]);
    expect(check.problems('GET', '/api/v1/nonsense/random', answer(429, 'application/problem+json', problem(429), { 'retry-after': '7' }))).toEqual([]);
    expect(check.problems('DELETE', '/odata/v2/nonsense_list', answer(405, 'application/xml', '<error/>', { allow: 'GET, HEAD', dataserviceversion: '2.0' }))).toEqual([]);
    // The raw answer to oversized headers carries no request id.
    expect(check.problems('GET', '/api/v1/nonsense/random', answer(431, 'application/problem+json', problem(431), { 'x-request-id': undefined }))).toEqual([]);
    // Preflights, at documented paths and elsewhere.
    const preflight = { 'access-control-allow-methods': 'GET, HEAD, POST', 'access-control-max-age': '86400' };
    expect(check.problems('OPTIONS', `/api/v1/admin/nonsense/${one.uuid}`, answer(204, undefined, '', preflight))).toEqual([]);
    expect(check.problems('OPTIONS', '/api/v1/nothing/here', answer(204, undefined, '', preflight))).toEqual([]);
  });

  it.each([
    ['an undeclared status', 'GET', '/api/v1/nonsense/random', answer(418, 'application/problem+json', problem(418)), /answered 418, which it does not declare/],
    ['an undeclared media type', 'GET', '/api/v1/nonsense/random', answer(200, 'text/plain', 'hello'), /as "text\/plain", but declares application\/json/],
    ['a body off its schema', 'GET', '/api/v1/nonsense/random', answer(200, 'application/json', JSON.stringify({ uuid: one.uuid, nonsense: 'x', timestamp: 1, extra: true })), /does not match the declared schema/],
    ['an export that is an object', 'GET', '/api/v1/nonsense?format=json', answer(200, 'application/json', '{}', { 'content-disposition': 'attachment; filename="nonsense.json"' }), /must be array/],
    ['a CSV without its header', 'GET', '/api/v1/nonsense', answer(200, 'text/csv', 'a,b\r\n', { 'content-disposition': 'attachment; filename="nonsense.csv"' }), /must match pattern/],
    ['an export without its file name', 'GET', '/api/v1/nonsense', answer(200, 'text/csv', 'uuid,nonsense,original_nonsense,timestamp\r\n'), /required header content-disposition is missing/],
    ['a problem without a detail', 'GET', '/api/v1/nonsense/random', answer(404, 'application/problem+json', '{"status":404}'), /must have required property/],
    ['a body that is not JSON', 'GET', '/api/v1/nonsense/status', answer(200, 'application/json', '{'), /not JSON/],
    ['a PNG that is not one', 'GET', `/api/v1/nonsense/${one.uuid}.png`, answer(200, 'image/png', 'GIF89a'), /not a PNG/],
    ['a body on a 204', 'DELETE', `/api/v1/admin/nonsense/${one.uuid}`, answer(204, 'application/json', '{}'), /with a body/],
    ['a 405 allowing an undocumented method', 'GET', '/api/v1/nonsense/report', answer(405, 'application/problem+json', problem(405), { allow: 'POST, PUT' }), /expected a 405/],
    ['a 200 for an undocumented method', 'DELETE', '/api/v1/nonsense/random', answer(200, 'application/json', ENTRY), /expected a 405/],
    ['a 200 at an undocumented path', 'GET', '/api/v1/secret', answer(200, 'application/json', '{}'), /does not have; expected a 404/],
    ['a problem+json from OData', 'GET', '/odata/v2/nonsense_list', answer(400, 'application/problem+json', problem(400)), /as "application\/problem\+json"/],
    ['an undeclared header', 'GET', '/api/v1/nonsense/random', answer(200, 'application/json', ENTRY, { 'content-disposition': 'attachment; filename="x"' }), /header content-disposition .* is not declared/],
    ['an ETag where none is declared', 'POST', '/api/v1/nonsense/report', answer(201, 'application/json', JSON.stringify({ id: one.uuid, entryUuid: one.uuid, reason: 'other', status: 'open' }), { etag: '"x"' }), /header etag .* is not declared/],
    ['a header off its schema', 'GET', '/api/v1/nonsense/random', answer(429, 'application/problem+json', problem(429), { 'retry-after': 'soon' }), /header retry-after \(soon\) does not match/],
    ['a missing request id', 'GET', '/api/v1/nonsense/random', answer(404, 'application/problem+json', problem(404), { 'x-request-id': undefined }), /required header x-request-id is missing/],
    ['a 401 without WWW-Authenticate', 'GET', '/api/v1/admin/log', answer(401, 'application/problem+json', problem(401)), /required header www-authenticate is missing/],
    ['a 405 without Allow', 'DELETE', '/api/v1/nonsense/random', answer(405, 'application/problem+json', problem(405)), /required header allow is missing/],
    ['a preflight with an undeclared status', 'OPTIONS', '/api/v1/nonsense/random', answer(200, 'text/plain', 'GET'), /OPTIONS .* answered 200, which it does not declare/],
    ['a preflight without its methods', 'OPTIONS', '/api/v1/nonsense/random', answer(204, undefined, '', { 'access-control-max-age': '86400' }), /required header access-control-allow-methods is missing/],
  ])('refuses %s', (_name, method, url, given, message) => {
    const problems = check.problems(method, url, given);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(message);
  });

  it('refuses a 405 at a path whose operations do not declare one', () => {
    const bare = new DocumentCheck({ paths: { '/api/v1/thing': { get: { responses: { 200: { description: 'ok' } } } } } });
    expect(bare.problems('POST', '/api/v1/thing', answer(405, 'application/problem+json', problem(405), { allow: 'GET, HEAD' }))).toEqual([
      'POST /api/v1/thing answered 405, which no operation of the path declares',
    ]);
  });

  it('is installed on test apps: an undeclared answer fails the inject', async () => {
    const app = Fastify();
    const document = {
      openapi: '3.1.0',
      paths: { '/api/v1/thing': { get: { responses: { 200: { description: 'ok', content: { 'application/json': { schema: { type: 'object', required: ['ok'] } } } } } } } },
    };
    app.get('/openapi.json', async () => document);
    app.get('/api/v1/thing', async (request, reply) => {
      const { bad, tag } = request.query as { bad?: string; tag?: string };
      if (tag) reply.header('etag', '"1"');
      return bad ? reply.code(202).send({ ok: true }) : { ok: true };
    });
    await app.ready();
    await checkAnswersAgainstDocument(app);
    expect((await app.inject('/api/v1/thing')).statusCode).toBe(200);
    await expect(app.inject('/api/v1/thing?bad=1')).rejects.toThrow(/GET \/api\/v1\/thing answered 202, which it does not declare/);
    // And an answer with a header its response does not declare.
    await expect(app.inject('/api/v1/thing?tag=1')).rejects.toThrow(/GET \/api\/v1\/thing 200: the header etag \("1"\) is not declared/);
    await app.close();
  });
});
