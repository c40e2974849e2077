/**
 * A consumer of /openapi.json that is not this project's code: Stoplight Prism, as a validating proxy
 * in front of the running service (`prism proxy <document> <service> --errors`). The public API's
 * requests go through it, the right ones and the wrong ones, and every answer must be what the
 * document declares: status, headers and body. Prism marks an answer it finds off the document with
 * an `sl-violations` header, and with `--errors` replaces it by its own problem+json; either fails the
 * test, naming the violations.
 *
 * Requests are passed on unvalidated (`--validate-request=false`), so the deliberately wrong ones
 * reach the service and its refusals are checked too; Prism's own CORS answers are off, so preflights
 * reach it as well. Where Prism cannot run (its package missing), the test is skipped with a message;
 * under CI it fails instead (test/requirements.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, entry, freePort, type TestContext } from '../helper.ts';
import { skipWithout } from '../requirements.ts';
import { until } from '../wait.ts';

const PRISM = path.resolve('node_modules/.bin/prism');
const SKIP = skipWithout('Stoplight Prism (@stoplight/prism-cli)', fs.existsSync(PRISM), 'npm install');

const plain = entry('A plain entry for the proxy.', 1_700_000_100, 'abcdef00-0000-4000-8000-000000000001');
const multiline = entry('Two lines\nfor the proxy.', 1_700_000_200, 'abcdef00-0000-4000-8000-000000000002');
const UNKNOWN = 'abcdef00-0000-4000-8000-00000000ffff';

interface Sent {
  status: number;
  headers: Headers;
  body: string;
}

describe.skipIf(SKIP)('the public API through Prism, validating against /openapi.json', () => {
  let t: TestContext;
  let prism: ChildProcess;
  let proxy: string;
  let upstream: string;
  let output = '';

  beforeAll(async () => {
    t = await createTestApp({ demo: true, entries: [plain, multiline] });
    upstream = `http://127.0.0.1:${await freePort()}`;
    await t.app.listen({ port: Number(new URL(upstream).port), host: '127.0.0.1' });
    const document = path.join(t.dir, 'openapi.json');
    fs.writeFileSync(document, await (await fetch(`${upstream}/openapi.json`)).text());
    const port = await freePort();
    proxy = `http://127.0.0.1:${port}`;
    prism = spawn(PRISM, ['proxy', document, upstream, '--errors', '--validate-request=false', '--cors=false', '--port', String(port), '--host', '127.0.0.1'], {
      env: { ...process.env, SCARF_ANALYTICS: 'false', NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    prism.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    prism.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    // Prism reads the document, then listens; until then the port refuses connections.
    await until(
      () => `Prism to start:\n${output}`,
      () => {
        if (prism.exitCode !== null) throw new Error(`Prism exited (${prism.exitCode}):\n${output}`);
        return fetch(`${proxy}/healthz`).then(() => true, () => false);
      },
      { timeoutMs: 30_000, intervalMs: 50 },
    );
  }, 60_000);

  afterAll(async () => {
    if (prism !== undefined && prism.exitCode === null) {
      const exited = new Promise((resolve) => prism.once('exit', resolve));
      prism.kill('SIGTERM');
      await exited;
    }
    await t?.close();
  });

  /** send makes one request through Prism and fails on any violation it reports. */
  async function send(method: string, url: string, init: { headers?: Record<string, string>; body?: string } = {}): Promise<Sent> {
    const response = await fetch(`${proxy}${url}`, { method, headers: init.headers, body: init.body, redirect: 'manual' });
    const body = await response.text();
    const violations = response.headers.get('sl-violations');
    const refused = (response.headers.get('content-type') ?? '').includes('problem+json') && body.includes('stoplight.io/prism/errors');
    expect(violations === null && !refused, `${method} ${url}: Prism found the answer off the document: ${violations ?? ''} ${refused ? body : ''}`).toBe(true);
    return { status: response.status, headers: response.headers, body };
  }

  it('passes a realistic run of the public API, its errors included', async () => {
    const seen: string[] = [];
    const expectStatus = async (method: string, url: string, status: number, init?: { headers?: Record<string, string>; body?: string }) => {
      const sent = await send(method, url, init);
      expect(sent.status, `${method} ${url}: ${sent.body.slice(0, 200)}`).toBe(status);
      seen.push(`${method} ${url.split('?')[0]} ${status}`);
      return sent;
    };

    const random = await expectStatus('GET', '/api/v1/nonsense/random', 200);
    expect(random.headers.get('cache-control')).toBe('no-store');
    const byUuid = await expectStatus('GET', `/api/v1/nonsense/${plain.uuid}`, 200);
    const etag = byUuid.headers.get('etag')!;
    await expectStatus('GET', `/api/v1/nonsense/${plain.uuid}`, 304, { headers: { 'if-none-match': etag } });
    await expectStatus('GET', `/api/v1/nonsense/${plain.uuid.toUpperCase()}`, 200);
    await expectStatus('GET', `/api/v1/nonsense/${UNKNOWN}`, 404);
    await expectStatus('GET', '/api/v1/nonsense/not-a-uuid', 400);
    await expectStatus('GET', `/api/v1/nonsense/${'a'.repeat(250)}`, 414);
    await expectStatus('GET', `/api/v1/nonsense/${plain.uuid}.jpg`, 404);

    const status = await expectStatus('GET', '/api/v1/nonsense/status', 200);
    await expectStatus('GET', '/api/v1/nonsense/status', 304, { headers: { 'if-none-match': status.headers.get('etag')! } });

    const csv = await expectStatus('GET', '/api/v1/nonsense', 200);
    expect(csv.headers.get('content-disposition')).toBe('attachment; filename="nonsense.csv"');
    await expectStatus('GET', '/api/v1/nonsense', 304, { headers: { 'if-none-match': csv.headers.get('etag')! } });
    await expectStatus('GET', '/api/v1/nonsense?format=json&q=proxy&after=1700000000', 200);
    await expectStatus('GET', '/api/v1/nonsense?format=txt&before=1700000150', 200);
    await expectStatus('GET', '/api/v1/nonsense?format=xml', 400);
    await expectStatus('GET', '/api/v1/nonsense?after=yesterday', 400);

    const emojis = await expectStatus('GET', '/api/v1/emojis', 200);
    const [emoji] = JSON.parse(emojis.body) as { url: string }[];
    const file = new URL(emoji!.url).pathname;
    const image = await expectStatus('GET', file, 200);
    await expectStatus('GET', file, 304, { headers: { 'if-none-match': image.headers.get('etag')! } });
    await expectStatus('GET', '/api/v1/emojis/nothing.png', 404);
    await expectStatus('GET', '/api/v1/variables', 200);

    const json = { 'content-type': 'application/json' };
    const report = await expectStatus('POST', '/api/v1/nonsense/report', 201, { headers: json, body: JSON.stringify({ entryUuid: plain.uuid, reason: 'duplicate' }) });
    expect(JSON.parse(report.body)).toMatchObject({ entryUuid: plain.uuid, status: 'open' });
    await expectStatus('POST', '/api/v1/nonsense/report', 400, { headers: json, body: JSON.stringify({ entryUuid: plain.uuid, reason: 'boring' }) });
    await expectStatus('POST', '/api/v1/nonsense/report', 400, { headers: json, body: '{"entryUuid":' });
    await expectStatus('POST', '/api/v1/nonsense/report', 404, { headers: json, body: JSON.stringify({ entryUuid: UNKNOWN, reason: 'other', details: 'Gone?' }) });
    await expectStatus('POST', '/api/v1/nonsense/report', 413, { headers: json, body: JSON.stringify({ entryUuid: plain.uuid, reason: 'other', details: 'x'.repeat(20_000) }) });
    await expectStatus('POST', '/api/v1/nonsense/report', 415, { headers: { 'content-type': 'text/plain' }, body: 'hello' });

    // A browser's preflight before the report, answered by the service.
    const preflight = await expectStatus('OPTIONS', '/api/v1/nonsense/report', 204, {
      headers: { origin: 'https://chat.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    });
    expect(preflight.headers.get('access-control-allow-methods')).toContain('POST');

    await expectStatus('GET', '/healthz', 200);
    await expectStatus('GET', '/readyz', 200);
    expect(seen).toHaveLength(30);
  }, 60_000);

  it('fails an answer off the document: Prism reports it', async () => {
    // A made-up document whose status answer needs a field the service does not send.
    const document = JSON.parse(fs.readFileSync(path.join(t.dir, 'openapi.json'), 'utf8')) as { paths: Record<string, { get: { responses: Record<string, unknown> } }> };
    document.paths['/api/v1/nonsense/status']!.get.responses['200'] = {
      description: 'The status, with a field it does not have',
      content: { 'application/json': { schema: { type: 'object', required: ['missing'], properties: { missing: { type: 'string' } } } } },
    };
    const file = path.join(t.dir, 'broken.json');
    fs.writeFileSync(file, JSON.stringify(document));
    const port = await freePort();
    const other = spawn(PRISM, ['proxy', file, upstream, '--errors', '--validate-request=false', '--cors=false', '--port', String(port), '--host', '127.0.0.1'], {
      env: { ...process.env, SCARF_ANALYTICS: 'false', NO_COLOR: '1' },
      stdio: 'ignore',
    });
    try {
      const answer = await until('Prism to start', () => fetch(`http://127.0.0.1:${port}/api/v1/nonsense/status`).catch(() => undefined), { timeoutMs: 30_000, intervalMs: 50 });
      const body = await answer.text();
      const flagged = answer.headers.get('sl-violations') !== null || body.includes('stoplight.io/prism/errors');
      expect(flagged, `${answer.status} ${body.slice(0, 300)}`).toBe(true);
    } finally {
      const exited = new Promise((resolve) => other.once('exit', resolve));
      other.kill('SIGTERM');
      await exited;
    }
  }, 60_000);
});
