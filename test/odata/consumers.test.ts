/**
 * Real consumers: an OData v2 client library from npm (@odata/client, verbose JSON) talking to a
 * listening server, and a namespace-aware XML parser (@xmldom/xmldom) reading the Atom feed and the
 * metadata. What they read must be the JSON export of the same database: same uuids, same raw texts,
 * same timestamps.
 */
import { Guid, OData, ODataDateTime } from '@odata/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestContext } from '../helper.ts';
import { readFeed } from './atom-reader.ts';

interface Exported {
  uuid: string;
  nonsense: string;
  original_nonsense?: string;
  timestamp: number;
}

interface ClientEntity {
  uuid: string;
  nonsense: string;
  original_nonsense: string | null;
  timestamp: string;
  created: string;
  multiline: boolean;
}

describe('OData read by real consumers, compared with the JSON export', () => {
  let t: TestContext;
  let address: string;
  let exported: Exported[];
  beforeAll(async () => {
    t = await createTestApp({ env: { RATE_LIMIT_READ: 'off', OVERLOAD_MAX_EVENT_LOOP_DELAY: 'off' }, demo: true });
    address = await t.app.listen({ host: '127.0.0.1', port: 0 });
    exported = (await t.app.inject('/api/v1/nonsense?format=json')).json();
    expect(exported.length).toBeGreaterThan(300);
    expect(exported.some((e) => e.original_nonsense !== undefined)).toBe(true);
  });
  afterAll(() => t.close());

  /** rawText is what both sides agree on for every entry: the raw text, whatever substitution picked. */
  const rawText = (e: { nonsense: string; original_nonsense?: string | null }) => e.original_nonsense ?? e.nonsense;

  function expectSameAsExport(read: { uuid: string; raw: string; timestamp: number; createdMs: number; multiline: boolean }[], expected = exported) {
    expect(read.map((e) => e.uuid)).toEqual(expected.map((e) => e.uuid));
    expect(read.map((e) => e.raw)).toEqual(expected.map(rawText));
    expect(read.map((e) => e.timestamp)).toEqual(expected.map((e) => e.timestamp));
    expect(read.map((e) => e.createdMs)).toEqual(expected.map((e) => e.timestamp * 1000));
    expect(read.map((e) => e.multiline)).toEqual(expected.map((e) => /[\r\n]/.test(rawText(e))));
  }

  const fromClient = (e: ClientEntity) => ({
    uuid: e.uuid,
    raw: rawText(e),
    timestamp: Number(e.timestamp),
    createdMs: Number(/^\/Date\((\d+)\)\/$/.exec(e.created)![1]),
    multiline: e.multiline,
  });

  it('an OData v2 client library reads the whole set, filters, counts and fetches by key', async () => {
    const client = OData.New({ metadataUri: `${address}/odata/v2/$metadata` });
    const set = client.getEntitySet<ClientEntity>('nonsense_list');

    const all = await set.query(OData.newOptions().custom('all', 'true'));
    expectSameAsExport(all.map(fromClient));

    const after = exported[100]!.timestamp;
    const filter = OData.newFilter().property('timestamp').gt(after);
    const later = await set.query(OData.newOptions().filter(filter).custom('all', 'true'));
    expectSameAsExport(later.map(fromClient), exported.filter((e) => e.timestamp > after));
    expect(await set.count(filter)).toBe(exported.filter((e) => e.timestamp > after).length);

    const since = new Date(after * 1000);
    const byDate = await set.query(OData.newOptions().filter(OData.newFilter().property('created').ge(ODataDateTime.from(since, false))).custom('all', 'true'));
    expect(byDate.map((e) => e.uuid)).toEqual(exported.filter((e) => e.timestamp >= after).map((e) => e.uuid));
    // The library's default percent-encodes the literal's colons once more; the service reads that too.
    const encoded = await set.query(OData.newOptions().filter(OData.newFilter().property('created').ge(ODataDateTime.from(since))).custom('all', 'true'));
    expect(encoded.map((e) => e.uuid)).toEqual(byDate.map((e) => e.uuid));

    const top = await set.query(OData.newOptions().top(5).skip(2).orderby('timestamp', 'desc').select(['uuid', 'timestamp']));
    expect(top.map((e) => e.uuid)).toEqual(
      [...exported].sort((a, b) => b.timestamp - a.timestamp || (a.uuid < b.uuid ? -1 : 1)).slice(2, 7).map((e) => e.uuid),
    );

    const withVariable = exported.find((e) => e.original_nonsense !== undefined)!;
    const one = await set.retrieve({ uuid: Guid.from(`guid'${withVariable.uuid}'`) });
    expect(fromClient(one)).toMatchObject({ uuid: withVariable.uuid, raw: withVariable.original_nonsense, timestamp: withVariable.timestamp });

    await expect(set.query(OData.newOptions().filter('bogus eq 1'))).rejects.toThrow(/Unknown property 'bogus'/);
  });

  it('an XML parser reads the paged Atom feed, following next links, as the export', async () => {
    const read: ReturnType<typeof fromClient>[] = [];
    let url: string | null = `${address}/odata/v2/nonsense_list`;
    let pages = 0;
    while (url) {
      const res: Response = await fetch(url);
      expect(res.headers.get('dataserviceversion')).toBe('2.0');
      const feed = readFeed(await res.text());
      for (const e of feed.entries) {
        const p = e.properties;
        expect(e.id).toBe(`${address}/odata/v2/nonsense_list(guid'${p.uuid!.value}')`);
        expect(new URL(e.editHref, feed.base!).href).toBe(e.id);
        read.push({
          uuid: p.uuid!.value!,
          raw: p.original_nonsense!.value ?? p.nonsense!.value!,
          timestamp: Number(p.timestamp!.value),
          createdMs: Date.parse(`${p.created!.value}Z`),
          multiline: p.multiline!.value === 'true',
        });
      }
      url = feed.next;
      pages++;
    }
    expect(pages).toBe(Math.ceil(exported.length / 100));
    expectSameAsExport(read);
    // Without variables the delivered text is the raw text, so Atom and export agree on `nonsense` too.
    const plain = (await fetch(`${address}/odata/v2/nonsense_list?all=true&$filter=original_nonsense eq null`).then((r) => r.text()));
    expect(readFeed(plain).entries.map((e) => e.properties.nonsense!.value)).toEqual(exported.filter((e) => e.original_nonsense === undefined).map((e) => e.nonsense));
  });
});
