/**
 * The API description at /openapi.json: linted by Redocly CLI with its strict rules (redocly.yaml:
 * recommended-strict), 0 errors and 0 warnings, and complete where client authors need it to be.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestContext } from '../helper.ts';

const run = promisify(execFile);
const REDOCLY = path.resolve('node_modules/.bin/redocly');
const REDOCLY_CONFIG = path.resolve('redocly.yaml');

type Response = { content?: Record<string, { schema: Record<string, unknown> }>; headers?: Record<string, { $ref: string }>; $ref?: string };
type Operation = { operationId?: string; summary?: string; security?: Record<string, string[]>[]; parameters?: { name: string; in: string; schema: Record<string, unknown> }[]; responses: Record<string, Response> };
type Document = {
  servers: { url: string }[];
  paths: Record<string, Record<string, Operation>>;
  components: { securitySchemes: Record<string, unknown>; schemas: Record<string, unknown>; responses: Record<string, Response>; headers: Record<string, { schema: Record<string, unknown> }> };
  security: unknown[];
};

describe('the OpenAPI document', () => {
  let t: TestContext;
  let doc: Document;
  beforeAll(async () => {
    t = await createTestApp();
    doc = (await t.app.inject({ url: '/openapi.json', headers: { host: 'nonsense.test:8080' } })).json();
  });
  afterAll(() => t.close());

  const operations = () => Object.entries(doc.paths).flatMap(([url, item]) => Object.entries(item).map(([method, op]) => ({ url, method, op })));

  it('passes redocly lint with the strict rules: 0 errors, 0 warnings', async () => {
    const file = path.join(t.dir, 'openapi.json');
    fs.writeFileSync(file, JSON.stringify(doc));
    // Redocly exits 1 when it finds errors; its JSON report says what they are either way.
    const { stdout } = await run(REDOCLY, ['lint', file, `--config=${REDOCLY_CONFIG}`, '--format=json'], {
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      maxBuffer: 16 * 1024 * 1024,
    }).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
    const report = JSON.parse(stdout) as { totals: { errors: number; warnings: number }; problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[] };
    const listed = report.problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`);
    expect(report.totals.errors, listed.join('\n')).toBe(0);
    expect(listed).toEqual([]);
  }, 60_000);

  it('names its server from the request, or from BASE_URL', async () => {
    expect(doc.servers).toEqual([{ url: 'http://nonsense.test:8080', description: 'This service' }]);
    const configured = await createTestApp({ env: { BASE_URL: 'https://nonsense.example.org' } });
    try {
      expect((await configured.app.inject('/openapi.json')).json().servers[0].url).toBe('https://nonsense.example.org');
      expect((await configured.app.inject('/docs/json')).json().servers[0].url).toBe('https://nonsense.example.org');
    } finally {
      await configured.close();
    }
  });

  it('gives every operation a summary and an operationId, and every admin operation the bearer scheme', () => {
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    for (const { url, method, op } of operations()) {
      expect(op.summary, `${method} ${url}`).toMatch(/\w/);
      expect(op.operationId, `${method} ${url}`).toMatch(/^[a-z][A-Za-z0-9]+$/);
      // A preflight is answered without credentials.
      if (url.startsWith('/api/v1/admin/') && method !== 'options') {
        expect(op.security, `${method} ${url}`).toEqual([{ bearerAuth: [] }]);
        expect(op.responses['401'], `${method} ${url}`).toBeDefined();
      } else expect(op.security, `${method} ${url}`).toBeUndefined();
    }
    expect(doc.security).toEqual([]);
    expect(operations().filter(({ url, method }) => url.startsWith('/api/v1/admin/') && method !== 'options')).toHaveLength(13);
  });

  it('declares the statuses every request can meet, and the CORS preflight of every path', () => {
    for (const [url, item] of Object.entries(doc.paths)) {
      expect(item.options?.responses['204'], url).toEqual({ $ref: '#/components/responses/Preflight' });
      for (const [method, op] of Object.entries(item).filter(([m]) => m !== 'options')) {
        const where = `${method} ${url}`;
        expect(Object.keys(op.responses), where).toEqual(expect.arrayContaining(['405', '408', '431', '500', '503']));
        const inPath = op.parameters?.some((p) => p.in === 'path') ?? false;
        // Only the router's path parameters can be too long; OData parses its own path.
        expect(op.responses['414'], where).toEqual(inPath && !url.startsWith('/odata/') ? { $ref: '#/components/responses/UriTooLong' } : undefined);
        expect(op.responses['405'], where).toEqual({ $ref: `#/components/responses/${url.startsWith('/odata/') ? 'ODataMethodNotAllowed' : 'MethodNotAllowed'}` });
      }
    }
    expect(Object.keys(doc.components.responses.MethodNotAllowed!.headers!)).toContain('Allow');
    expect(Object.keys(doc.components.responses.ODataMethodNotAllowed!.headers!)).toContain('Allow');
    expect(Object.keys(doc.components.responses.ODataMethodNotAllowed!.content!)).toEqual(['application/xml', 'application/json']);
  });

  it('declares the response headers once, in components, and refers to them', () => {
    expect(Object.keys(doc.components.headers).sort()).toEqual(
      ['Access-Control-Allow-Headers', 'Access-Control-Allow-Methods', 'Access-Control-Max-Age', 'Allow', 'Cache-Control', 'Content-Disposition', 'DataServiceVersion', 'ETag', 'Link', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After', 'WWW-Authenticate', 'X-Request-Id'].sort(),
    );
    const headersOf = (response: Response) => Object.fromEntries(Object.entries(response.headers ?? {}).map(([name, header]) => [name, header.$ref]));
    const byUuid = doc.paths['/api/v1/nonsense/{id}']!.get!.responses;
    expect(headersOf(byUuid['200']!)).toMatchObject({ ETag: '#/components/headers/ETag', 'X-Request-Id': '#/components/headers/X-Request-Id', 'RateLimit-Limit': '#/components/headers/RateLimit-Limit' });
    expect(headersOf(byUuid['429']!)).toHaveProperty('Retry-After');
    expect(headersOf(doc.paths['/api/v1/nonsense']!.get!.responses['200']!)).toHaveProperty('Content-Disposition');
    expect(headersOf(doc.paths['/api/v1/admin/reports']!.get!.responses['200']!)).toHaveProperty('Link', '#/components/headers/Link');
    expect(headersOf(doc.paths['/api/v1/admin/log']!.get!.responses['401']!)).toHaveProperty('WWW-Authenticate');
    expect(headersOf(doc.paths['/api/v1/admin/log']!.get!.responses['200']!)).not.toHaveProperty('RateLimit-Limit');
    expect(headersOf(doc.components.responses.Unavailable!)).toHaveProperty('Retry-After');
    expect(Object.values(doc.paths).flatMap((item) => Object.values(item)).flatMap((op) => Object.values(op.responses)).flatMap((r) => Object.values(r.headers ?? {}))
      .every((header) => header.$ref?.startsWith('#/components/headers/'))).toBe(true);
  });

  it('states the limits of the admin API as schema keywords', () => {
    const body = (url: string, method: string) => (doc.paths[url]![method] as unknown as { requestBody: { content: Record<string, { schema: { properties: Record<string, { pattern?: string; minLength?: number }> } }> } }).requestBody.content['application/json']!.schema;
    const text = body('/api/v1/admin/nonsense', 'post').properties.text!;
    expect(text.minLength).toBe(1);
    const pattern = new RegExp(text.pattern!, 'u');
    expect(['x', `  ${'x'.repeat(2000)}\n`, 'a\nb'].map((t) => pattern.test(t))).toEqual([true, true, true]);
    expect(['', '   \n ', 'x'.repeat(2001)].map((t) => pattern.test(t))).toEqual([false, false, false]);
    const name = doc.paths['/api/v1/admin/variables/{name}']!.put!.parameters!.find((p) => p.name === 'name')!.schema;
    const namePattern = new RegExp(name.pattern as string, 'u');
    expect(['$ANIMAL$', '${app_name}'].every((n) => namePattern.test(n))).toBe(true);
    expect(['$animal$', 'ANIMAL', '${App}'].some((n) => namePattern.test(n))).toBe(false);
  });

  it('documents the export exactly: media types, schemas, an enum and integers', () => {
    const exportOp = doc.paths['/api/v1/nonsense']!.get!;
    const content = exportOp.responses['200']!.content!;
    expect(Object.keys(content).sort()).toEqual(['application/json', 'text/csv', 'text/plain']);
    expect(content['application/json']!.schema).toMatchObject({ type: 'array', items: { type: 'object', required: ['uuid', 'nonsense', 'timestamp'] } });
    expect(content['text/csv']!.schema).toMatchObject({ type: 'string', contentMediaType: 'text/csv' });
    const parameter = (name: string) => exportOp.parameters!.find((p) => p.name === name)!.schema;
    expect(parameter('format')).toMatchObject({ type: 'string', enum: ['csv', 'json', 'txt'], default: 'csv' });
    expect(parameter('after')).toMatchObject({ type: 'integer', minimum: 0 });
    expect(parameter('before')).toMatchObject({ type: 'integer', minimum: 0 });
    expect(parameter('q')).toMatchObject({ type: 'string', maxLength: 200 });
  });

  it('documents the share image as its own path, and errors as problem+json', () => {
    const png = doc.paths['/api/v1/nonsense/{id}.png']!.get!;
    expect(Object.keys(png.responses['200']!.content!)).toEqual(['image/png']);
    expect(Object.keys(doc.paths['/api/v1/nonsense/{id}']!.get!.responses['200']!.content!)).toEqual(['application/json']);
    expect(png.responses['404']!.content!['application/problem+json']!.schema).toEqual({ $ref: '#/components/schemas/Problem' });
    expect(doc.components.schemas.Problem).toMatchObject({ type: 'object', required: ['type', 'title', 'status', 'detail'] });
  });

  it('documents the OData interface with its media types', () => {
    // The service root as OData clients are given it, and without the slash.
    expect(doc.paths['/odata/v2/']!.get!.responses['200']).toEqual(doc.paths['/odata/v2']!.get!.responses['200']);
    expect(doc.paths['/odata/v2/']!.get!.responses['414']).toBeUndefined();
    const service = doc.paths['/odata/v2']!.get!;
    expect(Object.keys(service.responses['200']!.content!)).toEqual(['application/atomsvc+xml', 'application/json']);
    expect(Object.keys(doc.paths['/odata/v2/$metadata']!.get!.responses['200']!.content!)).toEqual(['application/xml']);
    expect(Object.keys(doc.paths['/odata/v2/nonsense_list']!.get!.responses['200']!.content!)).toEqual(['application/atom+xml', 'application/json']);
    expect(doc.paths["/odata/v2/nonsense_list(guid'{uuid}')"]).toBeDefined();
    expect(Object.keys(doc.paths).filter((url) => url.includes('*'))).toEqual([]);
  });
});

describe('the reference at /docs, built on first use', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('serves the page and its files, with their validators, from the instance built on first use', async () => {
    const page = await t.app.inject('/docs/');
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['content-security-policy']).toContain("frame-ancestors 'self'");
    expect(page.headers['access-control-allow-origin']).toBe('*');
    const css = await t.app.inject('/docs/static/swagger-ui.css');
    expect(css.statusCode).toBe(200);
    expect(css.headers['content-type']).toMatch(/^text\/css/);
    expect(Number(css.headers['content-length'])).toBe(css.rawPayload.length);
    // Kept once read: the same bytes again, however the path is spelled, and a 304 (with no body and
    // no type) for its validator.
    expect((await t.app.inject('/docs/static/swagger-ui.css')).rawPayload.equals(css.rawPayload)).toBe(true);
    expect((await t.app.inject('/docs/static/swagger%2Dui.css?v=2')).rawPayload.equals(css.rawPayload)).toBe(true);
    const again = await t.app.inject({ url: '/docs/static/swagger-ui.css', headers: { 'if-none-match': String(css.headers.etag) } });
    expect(again.statusCode).toBe(304);
    expect(again.rawPayload.length).toBe(0);
    expect(again.headers['content-type']).toBeUndefined();
    const head = await t.app.inject({ method: 'HEAD', url: '/docs/static/swagger-ui.css' });
    expect([head.statusCode, head.headers['content-length'], head.rawPayload.length]).toEqual([200, css.headers['content-length'], 0]);
  });

  it('answers many requests at once, each spelling of a path in turn, all with the whole file', async () => {
    const script = (await t.app.inject('/docs/static/swagger-ui.js')).rawPayload;
    // Letters written as %xx in a different pattern each time: twelve paths for one file.
    const spell = (n: number) => [...'swagger-ui.js'].map((c, i) => ((n >> i) & 1 && /[a-z]/.test(c) ? `%${c.charCodeAt(0).toString(16)}` : c)).join('');
    const answers = await Promise.all(Array.from({ length: 12 }, (_, n) => t.app.inject(`/docs/static/${spell(n + 1)}`)));
    for (const answer of answers) expect([answer.statusCode, answer.rawPayload.equals(script)]).toEqual([200, true]);
  });

  it('answers what the reference lacks with a problem+json 404, without echoing the path', async () => {
    for (const url of ['/docs/nope', '/docs/static/nope.js', '/docs/static/%3Cscript%3E']) {
      const res = await t.app.inject(url);
      expect([url, res.statusCode, res.headers['content-type']]).toEqual([url, 404, 'application/problem+json; charset=utf-8']);
      expect(res.body).not.toContain('nope');
      expect(res.body).not.toContain('script');
    }
  });

  it('names the server from the real request, whatever a client sends in the header the forwarding uses', async () => {
    const res = await t.app.inject({ url: '/docs/json', headers: { host: 'nonsense.test:8080', 'x-nonsense-base-url': 'https://evil.example' } });
    expect(res.json().servers).toEqual([{ url: 'http://nonsense.test:8080', description: 'This service' }]);
  });
});
