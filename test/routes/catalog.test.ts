import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestContext } from '../helper.ts';

describe('emojis and variables (demo data)', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ demo: true });
  });
  afterAll(() => t.close());

  it('lists emojis sorted by name with absolute image URLs from the request', async () => {
    const res = await t.app.inject({ url: '/api/v1/emojis', headers: { host: 'nonsense.test:8080' } });
    expect(res.statusCode).toBe(200);
    const emojis = res.json() as { name: string; code: string; url: string }[];
    expect(emojis.length).toBeGreaterThanOrEqual(5);
    expect(emojis.map((e) => e.name)).toEqual([...emojis.map((e) => e.name)].sort());
    for (const emoji of emojis) {
      expect(emoji.code).toBe(`:${emoji.name}:`);
      expect(emoji.url).toBe(`http://nonsense.test:8080/api/v1/emojis/${emoji.name}.png`);
    }
  });

  it('never puts a hostile Host header into links', async () => {
    const res = await t.app.inject({ url: '/api/v1/emojis', headers: { host: 'evil.test/"><script>' } });
    expect(res.json()[0].url).toMatch(/^http:\/\/127\.0\.0\.1:8080\/api\/v1\/emojis\//);
  });

  it('uses BASE_URL for links when it is set', async () => {
    const t2 = await createTestApp({ demo: true, env: { BASE_URL: 'https://nonsense.example.org/' } });
    try {
      expect((await t2.app.inject('/api/v1/emojis')).json()[0].url).toMatch(/^https:\/\/nonsense\.example\.org\/api\/v1\/emojis\/\w+\.png$/);
    } finally {
      await t2.close();
    }
  });

  it('serves each emoji image with its type and a validator', async () => {
    const [emoji] = (await t.app.inject('/api/v1/emojis')).json();
    const res = await t.app.inject(new URL(emoji.url).pathname);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('image/png');
    expect(res.rawPayload.subarray(1, 4).toString()).toBe('PNG');
    // An image opened directly is a sandboxed document that can run and load nothing.
    expect(res.headers['content-security-policy']).toBe("default-src 'none'; sandbox");
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    const again = await t.app.inject({ url: new URL(emoji.url).pathname, headers: { 'if-none-match': res.headers.etag as string } });
    expect(again.statusCode).toBe(304);
  });

  it('answers 404 for unknown emojis and wrong extensions, naming the right one', async () => {
    expect((await t.app.inject('/api/v1/emojis/nope.png')).statusCode).toBe(404);
    expect((await t.app.inject('/api/v1/emojis/..%2F..%2Fetc%2Fpasswd')).statusCode).toBe(404);
    const wrong = await t.app.inject('/api/v1/emojis/toast.gif');
    expect(wrong.statusCode).toBe(404);
    expect(wrong.json().detail).toContain('/api/v1/emojis/toast.png');
  });

  it('lists server and client variables sorted by name, with values for server ones', async () => {
    const res = await t.app.inject('/api/v1/variables');
    expect(res.statusCode).toBe(200);
    const list = res.json() as { name: string; scope: string; description: string; values?: string[] }[];
    const names = list.map((v) => v.name);
    expect(names).toEqual([...names].sort());
    expect(list.filter((v) => v.scope === 'client').map((v) => v.name)).toEqual(['$AUTHOR$', '$CHANNEL$', '$SERVER$', '${app_name}']);
    const server = list.filter((v) => v.scope === 'server');
    expect(server.length).toBe(5);
    for (const v of server) expect(v.values!.length).toBeGreaterThan(0);
    for (const v of list.filter((x) => x.scope === 'client')) expect(v.values).toBeUndefined();
    const etag = res.headers.etag as string;
    expect((await t.app.inject({ url: '/api/v1/variables', headers: { 'if-none-match': etag } })).statusCode).toBe(304);
  });
});
