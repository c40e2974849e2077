/** The OData v2 interface over HTTP: documents, paging, query options, single entities, errors. */
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import odataRoutes from '../../src/routes/odata/index.ts';
import { createTestApp, entry, setState, type TestContext } from '../helper.ts';
import { child, NS, parseXml, readEntry, readFeed } from './atom-reader.ts';

const T0 = 1_600_000_000;
const uuidOf = (n: number) => `bbbbbbbb-0000-4000-8000-${String(n).padStart(12, '0')}`;
// 250 entries, three per second, so that paging has ties on timestamp to break by uuid.
const many = Array.from({ length: 250 }, (_, i) => entry(`Entry number ${i}`, T0 + Math.floor(i / 3) * 10, uuidOf(i)));
// Rate limits and load shedding are tested elsewhere; here they would only make a loaded test run flaky.
const env = { RATE_LIMIT_READ: 'off', OVERLOAD_MAX_EVENT_LOOP_DELAY: 'off' };

describe('OData documents and feed', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ env, entries: many });
  });
  afterAll(() => t.close());
  const get = (url: string, headers: Record<string, string> = {}) => t.app.inject({ url: url.replace(/ /g, '%20'), headers });

  it('serves $metadata: EDMX 1.0, DataServiceVersion 2.0, the entity type and its set', async () => {
    const res = await get('/odata/v2/$metadata');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/xml;charset=utf-8');
    expect(res.headers.dataserviceversion).toBe('2.0');
    const root = parseXml(res.body).documentElement!;
    expect([root.namespaceURI, root.localName, root.getAttribute('Version')]).toEqual([NS.edmx, 'Edmx', '1.0']);
    const services = child(root, NS.edmx, 'DataServices')!;
    expect(services.getAttributeNS(NS.m, 'DataServiceVersion')).toBe('2.0');
    const schema = child(services, NS.edm, 'Schema')!;
    expect(schema.getAttribute('Namespace')).toBe('NonsenseService');
    const type = child(schema, NS.edm, 'EntityType')!;
    expect(type.getAttribute('Name')).toBe('Nonsense');
    expect(child(child(type, NS.edm, 'Key')!, NS.edm, 'PropertyRef')!.getAttribute('Name')).toBe('uuid');
    const properties = Array.from(type.getElementsByTagNameNS(NS.edm, 'Property')).map((p) => [p.getAttribute('Name'), p.getAttribute('Type'), p.getAttribute('Nullable')]);
    expect(properties).toEqual([
      ['uuid', 'Edm.Guid', 'false'],
      ['nonsense', 'Edm.String', 'false'],
      ['original_nonsense', 'Edm.String', 'true'],
      ['timestamp', 'Edm.Int64', 'false'],
      ['created', 'Edm.DateTime', 'false'],
      ['multiline', 'Edm.Boolean', 'false'],
    ]);
    const container = child(schema, NS.edm, 'EntityContainer')!;
    expect(container.getAttributeNS(NS.m, 'IsDefaultEntityContainer')).toBe('true');
    const set = child(container, NS.edm, 'EntitySet')!;
    expect([set.getAttribute('Name'), set.getAttribute('EntityType')]).toEqual(['nonsense_list', 'NonsenseService.Nonsense']);
  });

  it('serves the service document in AtomPub and in JSON', async () => {
    for (const path of ['/odata/v2/', '/odata/v2']) {
      const res = await get(path);
      expect(res.headers['content-type']).toBe('application/atomsvc+xml;charset=utf-8');
      const root = parseXml(res.body).documentElement!;
      expect([root.namespaceURI, root.localName]).toEqual([NS.app, 'service']);
      const collection = root.getElementsByTagNameNS(NS.app, 'collection')[0]!;
      expect(collection.getAttribute('href')).toBe('nonsense_list');
      expect(collection.getElementsByTagNameNS(NS.atom, 'title')[0]!.textContent).toBe('nonsense_list');
    }
    expect((await get('/odata/v2/?$format=json')).json()).toEqual({ d: { EntitySets: ['nonsense_list'] } });
  });

  it('pages the Atom feed by 100 with keyset next links; following them reads every entry once, even while entries are added', async () => {
    const first = await get('/odata/v2/nonsense_list');
    expect(first.headers['content-type']).toBe('application/atom+xml;type=feed;charset=utf-8');
    let feed = readFeed(first.body);
    expect(feed.base).toMatch(/^http:\/\/localhost(:80)?\/odata\/v2\/$/);
    expect(feed.entries).toHaveLength(100);
    expect(feed.next).toMatch(/^http:\/\/localhost(:80)?\/odata\/v2\/nonsense_list\?\$skiptoken=\d+\.[0-9a-f-]{36}$/);
    const seen = feed.entries.map((e) => e.properties.uuid!.value!);
    let pages = 1;
    while (feed.next) {
      // Between pages: one entry sorting before the position already read, one after it.
      await t.storage.entries.insertEntries([
        entry(`Added early ${pages}`, T0 - pages, uuidOf(1000 + pages)),
        entry(`Added late ${pages}`, T0 + 100_000 + pages, uuidOf(2000 + pages)),
      ]);
      const res = await get(new URL(feed.next).pathname + new URL(feed.next).search);
      expect(res.statusCode).toBe(200);
      feed = readFeed(res.body);
      seen.push(...feed.entries.map((e) => e.properties.uuid!.value!));
      pages++;
    }
    expect(new Set(seen).size).toBe(seen.length);
    for (const e of many) expect(seen).toContain(e.uuid);
    // Entries added behind the reading position are not seen; those ahead of it all are.
    expect(seen.filter((u) => u.includes('-00000000100'))).toEqual([]);
    expect(seen.filter((u) => u.includes('-0000000020'))).toHaveLength(pages - 1);
    expect(pages).toBe(3);
  });

  it('pages JSON with __next, keeps $filter, $select and $inlinecount in the link, and shrinks $top', async () => {
    const url = `/odata/v2/nonsense_list?$format=json&$filter=timestamp ge ${T0} and timestamp lt ${T0 + 10000}&$select=uuid,timestamp&$inlinecount=allpages&$top=230`;
    let body = (await get(url)).json().d;
    const seen: string[] = [];
    const counts: string[] = [];
    for (;;) {
      seen.push(...body.results.map((e: { uuid: string }) => e.uuid));
      counts.push(body.__count);
      expect(Object.keys(body.results[0])).toEqual(['__metadata', 'uuid', 'timestamp']);
      if (!body.__next) break;
      expect(body.__next).toContain('$filter=timestamp%20ge%201600000000%20and%20timestamp%20lt%201600010000');
      const next = new URL(body.__next);
      body = (await get(next.pathname + next.search)).json().d;
    }
    expect(seen).toHaveLength(230);
    expect(seen).toEqual(many.slice(0, 230).map((e) => e.uuid));
    expect(counts).toEqual(['250', '250', '250']);
  });

  it('pages a custom order with $skip next links', async () => {
    const first = (await get('/odata/v2/nonsense_list?$format=json&$orderby=nonsense desc&$filter=timestamp ge 1600000000 and timestamp lt 1600010000')).json().d;
    expect(first.results).toHaveLength(100);
    expect(first.__next).toMatch(/\$orderby=nonsense%20desc.*\$skip=100$/);
    const second = (await get(new URL(first.__next).pathname + new URL(first.__next).search)).json().d;
    const all = [...first.results, ...second.results, ...(second.__next ? (await get(new URL(second.__next).pathname + new URL(second.__next).search)).json().d.results : [])];
    const texts = all.map((e: { nonsense: string }) => e.nonsense);
    expect(texts).toHaveLength(250);
    expect(texts).toEqual([...texts].sort().reverse());
  });

  it('answers all=true with every entry in one streamed response, no next link, query options applied', async () => {
    const feed = readFeed((await get('/odata/v2/nonsense_list?all=true&$filter=timestamp ge 1600000000 and timestamp lt 1600010000')).body);
    expect(feed.entries).toHaveLength(250);
    expect(feed.next).toBeNull();
    expect(feed.entries.map((e) => e.properties.uuid!.value)).toEqual(many.map((e) => e.uuid));
    const json = (await get('/odata/v2/nonsense_list?all=true&$format=json&$skip=5&$top=200&$orderby=timestamp desc&$inlinecount=allpages&$filter=timestamp ge 1600000000 and timestamp lt 1600010000')).json().d;
    expect(json.results).toHaveLength(200);
    expect(json.__count).toBe('250');
    expect(json.__next).toBeUndefined();
    expect(json.results[0].uuid).toBe(many[244]!.uuid); // 249, then 246-248 (uuid breaks the tie ascending), then 243, 244
  });

  it('serves $count as plain text, honouring $filter, $skip and $top', async () => {
    const res = await get(`/odata/v2/nonsense_list/$count?$filter=timestamp ge ${T0} and timestamp lt ${T0 + 30}`);
    expect(res.headers['content-type']).toBe('text/plain;charset=utf-8');
    expect(res.body).toBe('9');
    expect((await get(`/odata/v2/nonsense_list/$count?$filter=timestamp ge ${T0} and timestamp lt ${T0 + 30}&$skip=4`)).body).toBe('5');
    expect((await get(`/odata/v2/nonsense_list/$count?$filter=timestamp ge ${T0} and timestamp lt ${T0 + 30}&$top=2`)).body).toBe('2');
  });

  it('writes m:count and applies $top, $skip and $select to Atom', async () => {
    const feed = readFeed((await get(`/odata/v2/nonsense_list?$filter=timestamp ge ${T0} and timestamp lt ${T0 + 10000}&$inlinecount=allpages&$top=2&$skip=3&$select=nonsense,multiline`)).body);
    expect(feed.count).toBe('250');
    expect(feed.next).toBeNull();
    expect(feed.entries.map((e) => Object.keys(e.properties))).toEqual([['nonsense', 'multiline'], ['nonsense', 'multiline']]);
    expect(feed.entries.map((e) => e.properties.nonsense!.value)).toEqual(['Entry number 3', 'Entry number 4']);
    expect(readFeed((await get('/odata/v2/nonsense_list?$top=0')).body).entries).toEqual([]);
  });

  it('answers Accept: application/json with JSON, and $format over Accept', async () => {
    expect((await get('/odata/v2/nonsense_list?$top=1', { accept: 'application/json' })).headers['content-type']).toBe('application/json;charset=utf-8');
    expect((await get('/odata/v2/nonsense_list?$top=1', { accept: 'application/atom+xml, application/json;q=0.5' })).headers['content-type']).toMatch(/^application\/atom\+xml/);
    expect((await get('/odata/v2/nonsense_list?$top=1&$format=atom', { accept: 'application/json' })).headers['content-type']).toMatch(/^application\/atom\+xml/);
    expect((await get('/odata/v2/nonsense_list?$top=1&$format=xml')).headers['content-type']).toMatch(/^application\/atom\+xml/);
  });
});

describe('OData single entities, errors and headers', () => {
  let t: TestContext;
  const variables = [{ name: '$ANIMAL$', description: 'An animal.', values: ['newt'] }];
  const plain = entry('Plain words', T0, uuidOf(1));
  const withVariable = entry('Feed the $ANIMAL$\nnow', T0 + 1, uuidOf(2));
  const hidden = entry('Hidden words', T0 + 2, uuidOf(3));
  beforeAll(async () => {
    t = await createTestApp({ env, variables, entries: [plain, withVariable, hidden] });
    await setState(t.storage, hidden.uuid, 'hidden');
  });
  afterAll(() => t.close());
  const get = (url: string, headers: Record<string, string> = {}) => t.app.inject({ url: url.replace(/ /g, '%20'), headers });

  it('serves one entity as an Atom entry, by key in any case, with the key named or not', async () => {
    for (const key of [`guid'${withVariable.uuid}'`, `guid'${withVariable.uuid.toUpperCase()}'`, `uuid=guid'${withVariable.uuid}'`, `guid%27${withVariable.uuid}%27`]) {
      const res = await get(`/odata/v2/nonsense_list(${key})`);
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('application/atom+xml;type=entry;charset=utf-8');
      const root = parseXml(res.body).documentElement!;
      const e = readEntry(root);
      expect(e.id).toMatch(new RegExp(`/odata/v2/nonsense_list\\(guid'${withVariable.uuid}'\\)$`));
      expect(e.editHref).toBe(`nonsense_list(guid'${withVariable.uuid}')`);
      expect(e.category).toBe('NonsenseService.Nonsense');
      expect(e.properties).toEqual({
        uuid: { value: withVariable.uuid, type: 'Edm.Guid' },
        nonsense: { value: 'Feed the newt\nnow', type: null },
        original_nonsense: { value: 'Feed the $ANIMAL$\nnow', type: null },
        timestamp: { value: String(T0 + 1), type: 'Edm.Int64' },
        created: { value: '2020-09-13T12:26:41', type: 'Edm.DateTime' },
        multiline: { value: 'true', type: 'Edm.Boolean' },
      });
    }
  });

  it('serves one entity as JSON {"d": …} with __metadata, Int64 as a string and /Date()/', async () => {
    const res = await get(`/odata/v2/nonsense_list(guid'${plain.uuid}')?$format=json`);
    expect(res.body).toContain('"created":"\\/Date(1600000000000)\\/"');
    expect(res.json()).toEqual({
      d: {
        __metadata: { id: expect.stringMatching(/nonsense_list\(guid'bbbbbbbb/), uri: expect.stringMatching(/^http:.*\/odata\/v2\/nonsense_list\(guid'/), type: 'NonsenseService.Nonsense' },
        uuid: plain.uuid,
        nonsense: 'Plain words',
        original_nonsense: null,
        timestamp: String(T0),
        created: '/Date(1600000000000)/',
        multiline: false,
      },
    });
    expect(Object.keys((await get(`/odata/v2/nonsense_list(guid'${plain.uuid}')?$format=json&$select=nonsense`)).json().d)).toEqual(['__metadata', 'nonsense']);
  });

  it('answers 404 in the OData format for unknown and hidden entities and unknown resources', async () => {
    for (const url of [`/odata/v2/nonsense_list(guid'${uuidOf(99)}')`, `/odata/v2/nonsense_list(guid'${hidden.uuid}')`, '/odata/v2/Nonsense_List', '/odata/v2/nothing/here']) {
      const xml = await get(url);
      expect(xml.statusCode).toBe(404);
      expect(xml.headers['content-type']).toBe('application/xml;charset=utf-8');
      const root = parseXml(xml.body).documentElement!;
      expect([root.namespaceURI, root.localName]).toEqual([NS.m, 'error']);
      // The metadata namespace is the default one: UI5 loses the message of a prefixed m:error.
      expect([root.prefix, root.tagName]).toEqual([null, 'error']);
      expect(child(root, NS.m, 'code')).toBeDefined();
      const message = child(root, NS.m, 'message')!;
      expect(message.getAttributeNS('http://www.w3.org/XML/1998/namespace', 'lang')).toBe('en-US');
      expect(message.textContent).toMatch(/There is no (entity|resource)/);
      const json = await get(`${url}?$format=json`);
      expect(json.statusCode).toBe(404);
      expect(json.json()).toEqual({ error: { code: '', message: { lang: 'en-US', value: expect.stringMatching(/There is no/) } } });
    }
    expect((await get('/odata/v2/nonsense_list?$format=json')).json().d.results.map((e: { uuid: string }) => e.uuid)).toEqual([plain.uuid, withVariable.uuid]);
    expect((await get('/odata/v2/nonsense_list/$count')).body).toBe('2');
  });

  it.each([
    ['$top=-1', /\$top must be a non-negative integer/],
    ['$top=abc', /\$top must be a non-negative integer/],
    ['$top=1.5', /\$top must be a non-negative integer/],
    ['$skip=x', /\$skip must be a non-negative integer/],
    ['$top=1&$top=2', /given more than once/],
    ['$search=cat', /query option \$search is not supported/],
    ['$expand=Author', /\$expand is not supported/],
    ['$inlinecount=some', /allpages or none/],
    ['$select=nonsense,bogus', /Unknown property 'bogus' in \$select/],
    ['$skiptoken=garbage', /not one this service gave out/],
    [`$skiptoken=1.${uuidOf(1)}&$orderby=nonsense`, /\$skiptoken only continues an order by/],
    ['all=maybe', /all must be true or false/],
    ['$filter=(', /Syntax error in \$filter at character 2/],
  ])('answers 400 for %s, in XML and in JSON', async (query, message) => {
    const xml = await get(`/odata/v2/nonsense_list?${query}`);
    expect(xml.statusCode).toBe(400);
    expect(xml.headers['content-type']).toBe('application/xml;charset=utf-8');
    expect(xml.headers.dataserviceversion).toBe('2.0');
    expect(parseXml(xml.body).documentElement!.getElementsByTagNameNS(NS.m, 'message')[0]!.textContent).toMatch(message);
    const json = await get(`/odata/v2/nonsense_list?${query}&$format=json`);
    expect(json.statusCode).toBe(400);
    expect(json.json().error.message.value).toMatch(message);
    const accept = await get(`/odata/v2/nonsense_list?${query}`, { accept: 'application/json' });
    expect(accept.json().error.message.value).toMatch(message);
  });

  it('answers a bad $format in XML, bad keys with 400, other methods with 405', async () => {
    const format = await get('/odata/v2/nonsense_list?$format=csv');
    expect([format.statusCode, format.headers['content-type']]).toEqual([400, 'application/xml;charset=utf-8']);
    expect(format.body).toContain('$format must be json, atom or xml');
    expect((await get("/odata/v2/nonsense_list('abc')")).statusCode).toBe(400);
    expect((await get(`/odata/v2/nonsense_list(guid'${plain.uuid}')/nonsense`)).statusCode).toBe(400);
    const post = await t.app.inject({ method: 'POST', url: '/odata/v2/nonsense_list', payload: {} });
    expect(post.statusCode).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
    expect(post.body).toContain('allowed: GET, HEAD.');
    expect(post.headers.dataserviceversion).toBe('2.0');
    expect(post.body).toMatch(/^<\?xml version="1\.0" encoding="utf-8"\?><error xmlns="http:\/\/schemas\.microsoft\.com\/ado\/2007\/08\/dataservices\/metadata"><code\/><message xml:lang="en-US">/);
  });

  it('sends DataServiceVersion: 2.0 on every response, 304s included, and revalidates with ETags', async () => {
    const urls = ['/odata/v2/', '/odata/v2/$metadata', '/odata/v2/nonsense_list', '/odata/v2/nonsense_list/$count', `/odata/v2/nonsense_list(guid'${plain.uuid}')`, '/odata/v2/nonsense_list?$filter=x', '/odata/v2/zzz'];
    for (const url of urls) {
      const res = await get(url);
      expect(res.headers.dataserviceversion, url).toBe('2.0');
      if (res.statusCode !== 200) continue;
      const again = await get(url, { 'if-none-match': res.headers.etag as string });
      expect(again.statusCode, url).toBe(304);
      expect(again.headers.dataserviceversion, url).toBe('2.0');
    }
    const etag = (await get('/odata/v2/nonsense_list')).headers.etag as string;
    await setState(t.storage, hidden.uuid, 'visible');
    const changed = await get('/odata/v2/nonsense_list', { 'if-none-match': etag });
    expect(changed.statusCode).toBe(200);
    expect(readFeed(changed.body).entries).toHaveLength(3);
    await setState(t.storage, hidden.uuid, 'hidden');
    const head = await t.app.inject({ method: 'HEAD', url: '/odata/v2/nonsense_list' });
    expect([head.statusCode, head.body, head.headers.dataserviceversion]).toEqual([200, '', '2.0']);
  });
});

describe('OData links and page size', () => {
  it('makes every link absolute from BASE_URL when it is set', async () => {
    const t = await createTestApp({ env: { ...env, BASE_URL: 'https://nonsense.example.org' }, entries: many.slice(0, 120) });
    try {
      const feed = readFeed((await t.app.inject({ url: '/odata/v2/nonsense_list', headers: { host: 'evil.example' } })).body);
      expect(feed.base).toBe('https://nonsense.example.org/odata/v2/');
      expect(feed.id).toBe('https://nonsense.example.org/odata/v2/nonsense_list');
      expect(feed.entries[0]!.id).toBe(`https://nonsense.example.org/odata/v2/nonsense_list(guid'${many[0]!.uuid}')`);
      expect(feed.next).toMatch(/^https:\/\/nonsense\.example\.org\/odata\/v2\/nonsense_list\?\$skiptoken=/);
    } finally {
      await t.close();
    }
  });

  it('takes the page size as a plugin option', async () => {
    const t = await createTestApp({ env, entries: many.slice(0, 20) });
    const app = Fastify();
    app.decorate('config', t.config);
    app.decorate('storage', t.storage);
    await app.register(odataRoutes, { prefix: '/odata/v2', pageSize: 7 });
    try {
      const seen: string[] = [];
      let url: string | undefined = '/odata/v2/nonsense_list?$format=json';
      while (url) {
        const d: { results: { uuid: string }[]; __next?: string } = (await app.inject(url)).json().d;
        expect(d.results.length).toBeLessThanOrEqual(7);
        seen.push(...d.results.map((e) => e.uuid));
        url = d.__next === undefined ? undefined : new URL(d.__next).pathname + new URL(d.__next).search;
      }
      expect(seen).toEqual(many.slice(0, 20).map((e) => e.uuid));
    } finally {
      await app.close();
      await t.close();
    }
  });
});

describe('OData with hostile stored texts', () => {
  it('escapes markup and replaces characters XML forbids, so the feed always parses', async () => {
    const hostile = [
      entry('<script>alert("x")</script> & friends', T0, uuidOf(1)),
      entry('Ends a CDATA ]]> and has &amp; literally', T0 + 1, uuidOf(2)),
      entry('Control \u0001 char, bell \u0007, \uFFFE, vertical tab \u000B', T0 + 2, uuidOf(3)),
      entry("Quotes ' and \" and a\r\ncarriage return and a\ttab", T0 + 3, uuidOf(4)),
      entry('Emoji 🦆 kept whole', T0 + 4, uuidOf(5)),
    ];
    const t = await createTestApp({ env });
    // Straight into storage: legacy data that never passed the text rules.
    await t.storage.entries.insertEntries(hostile);
    try {
      const res = await t.app.inject('/odata/v2/nonsense_list?all=true');
      const feed = readFeed(res.body);
      expect(feed.entries.map((e) => e.properties.nonsense!.value)).toEqual([
        '<script>alert("x")</script> & friends',
        'Ends a CDATA ]]> and has &amp; literally',
        'Control \uFFFD char, bell \uFFFD, \uFFFD, vertical tab \uFFFD',
        "Quotes ' and \" and a\r\ncarriage return and a\ttab",
        'Emoji 🦆 kept whole',
      ]);
      expect(res.body).not.toContain('<script>');
      const single = readEntry(parseXml((await t.app.inject(`/odata/v2/nonsense_list(guid'${uuidOf(3)}')`)).body).documentElement!);
      expect(single.properties.nonsense!.value).toBe('Control \uFFFD char, bell \uFFFD, \uFFFD, vertical tab \uFFFD');
      // JSON keeps the stored text exactly (JSON can escape any character).
      const json = (await t.app.inject('/odata/v2/nonsense_list?$format=json')).json().d.results;
      expect(json.map((e: { nonsense: string }) => e.nonsense)).toEqual(hostile.map((e) => e.text));
      // A hostile filter literal is data, and an error message quoting input stays well-formed XML.
      const bad = await t.app.inject(`/odata/v2/nonsense_list?$filter=${encodeURIComponent("bogus\u0001<x>&")}`);
      expect(bad.statusCode).toBe(400);
      parseXml(bad.body);
      const unknown = await t.app.inject(`/odata/v2/${encodeURIComponent('<x>&\u0001')}`);
      expect(unknown.statusCode).toBe(404);
      expect(parseXml(unknown.body).documentElement!.textContent).toContain('<x>&\uFFFD');
    } finally {
      await t.close();
    }
  });
});
