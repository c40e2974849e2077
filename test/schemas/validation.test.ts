/**
 * Requests are checked by their schemas, with the service's own words for what is wrong; nothing
 * switches validation off.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compilePendingSchemas } from '../../src/runtime/compile-later.ts';
import { createTestApp, entry, type TestContext } from '../helper.ts';

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((item) => {
    const full = path.join(dir, item.name);
    return item.isDirectory() ? sourceFiles(full) : full.endsWith('.ts') ? [full] : [];
  });
}

describe('request validation', () => {
  it('is never switched off: no route brings its own validator', () => {
    const offenders = sourceFiles('src').filter((file) => /validatorCompiler\s*:/.test(fs.readFileSync(file, 'utf8')));
    expect(offenders).toEqual([]);
  });

  let t: TestContext;
  let auth: Record<string, string>;
  const one = entry('Validated entry.', 1_700_000_000, 'eeeeeeee-0000-4000-8000-000000000001');
  beforeAll(async () => {
    t = await createTestApp({ entries: [one] });
    auth = { authorization: `Bearer ${await t.storage.tokens.create('val')}` };
  });
  afterAll(() => t.close());

  it('compiles every route’s schemas, including those no request has used yet', async () => {
    // Schemas compile on first use, the rest in the background after the start; none may fail.
    await expect(compilePendingSchemas()).resolves.toBeUndefined();
  });

  const admin = (method: 'POST' | 'PATCH' | 'PUT' | 'GET' | 'DELETE', url: string, payload?: unknown) =>
    t.app.inject({ method, url: `/api/v1/admin${url}`, headers: { ...auth, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) }, payload: payload === undefined ? undefined : JSON.stringify(payload) });

  it.each([
    ['/api/v1/nonsense?q=a&q=b', 'q', 'The parameter "q" is given more than once; give it once.'],
    ['/api/v1/nonsense?after=1&after=2', 'after', 'The parameter "after" is given more than once; give it once.'],
    ['/api/v1/nonsense?format=tsv', 'format', 'The parameter "format" must be one of: csv, json, txt; got "tsv".'],
    ['/api/v1/nonsense?before=0x10', 'before', /^The parameter "before" must be a non-negative integer Unix timestamp in seconds/],
    ['/api/v1/admin/log?limit=0', 'limit', 'The parameter "limit" must be an integer from 1 to 500; got 0.'],
    ['/api/v1/admin/reports?status=closed', 'status', 'The parameter "status" must be one of: open, accepted, dismissed; got "closed".'],
    ['/api/v1/admin/nonsense/nope', 'uuid', /^The path parameter "uuid" must be a UUID such as /],
  ])('answers %s with a 400 naming the parameter', async (url, parameter, detail) => {
    const res = await t.app.inject({ url, headers: auth });
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(res.json().parameter).toBe(parameter);
    if (typeof detail === 'string') expect(res.json().detail).toBe(detail);
    else expect(res.json().detail).toMatch(detail);
  });

  it.each([
    ['POST', '/nonsense', { text: 42 }, 'text', 'The field "text" must be a string; got 42.'],
    ['POST', '/nonsense', { text: 'ok', timestamp: '1700000000' }, 'timestamp', /^The field "timestamp" must be a non-negative integer Unix timestamp .*; got "1700000000"\.$/],
    ['POST', '/nonsense', { text: '   ' }, 'text', 'The field "text" is empty.'],
    ['PATCH', `/nonsense/${one.uuid}`, {}, null, 'The body must be a JSON object with "text", "state" or both; got an object.'],
    ['PATCH', `/nonsense/${one.uuid}`, { state: 'gone' }, 'state', 'The field "state" must be one of: visible, hidden; got "gone".'],
    ['PUT', '/variables/%24OK%24', { description: 'x', values: ['ok', 7] }, 'values[1]', 'The field "values[1]" must be a string of at most 200 characters; got 7.'],
    ['PUT', '/variables/%24OK%24', { description: 'x', values: ['ok', ' \n '] }, 'values[1]', 'The field "values[1]" is not acceptable: it is empty.'],
    ['PUT', '/variables/%24OK%24', [], null, 'The body must be a JSON object with "description" and "values"; got a list.'],
  ] as const)('answers %s %s %j with a 400 naming the field', async (method, url, payload, field, detail) => {
    const res = await admin(method, url, payload);
    expect(res.statusCode).toBe(400);
    expect(res.json().field).toBe(field ?? undefined);
    if (typeof detail === 'string') expect(res.json().detail).toBe(detail);
    else expect(res.json().detail).toMatch(detail);
  });

  it('names a path parameter that breaks a rule of the domain', async () => {
    const res = await admin('PUT', `/variables/${encodeURIComponent('$AUTHOR$')}`, { description: 'x', values: ['a'] });
    expect(res.json()).toMatchObject({ status: 400, parameter: 'name', detail: expect.stringContaining('client-side variable') });
    const emoji = await t.app.inject({ method: 'DELETE', url: '/api/v1/admin/emojis/Bad!', headers: auth });
    expect(emoji.json()).toMatchObject({ status: 400, parameter: 'name', detail: 'The path parameter "name" must be an emoji name: 2 to 32 of a-z, 0-9 and _; got "Bad!".' });
  });

  it('checks the content type before the body: a body of the wrong kind is a 415, not a 400', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/admin/nonsense', headers: { ...auth, 'content-type': 'text/plain' }, payload: '{"text":"hi"}' });
    expect(res.statusCode).toBe(415);
    const image = await t.app.inject({ method: 'PUT', url: '/api/v1/admin/emojis/toasty', headers: { ...auth, 'content-type': 'text/plain' }, payload: 'not an image' });
    expect(image.statusCode).toBe(415);
    expect(image.json().detail).toBe('Send the body as image/png, image/gif, image/webp; got "text/plain".');
  });

  it('applies defaults and ignores unknown fields and parameters', async () => {
    const created = await admin('POST', '/nonsense', { text: 'With an extra field.', colour: 'teal' });
    expect(created.statusCode).toBe(201);
    expect(Math.abs(created.json().timestamp - Date.now() / 1000)).toBeLessThan(60);
    expect((await t.app.inject({ url: '/api/v1/admin/reports?unknown=1', headers: auth })).statusCode).toBe(200);
  });
});
