/**
 * The OData interface read by the consumers that spreadsheet/BI and SAP tools are built on, compared
 * with the JSON export of the same database:
 *
 * - Microsoft's datajs, as SAP UI5 ships it (sap/ui/thirdparty/datajs.js from @openui5/sap.ui.core),
 *   in Debian's headless Chromium: service document, $metadata, the Atom feed page by page, the
 *   verbose JSON feed, $count, one entity and an error;
 * - OpenUI5's sap.ui.model.odata.v2.ODataModel, bootstrapped from the package's own sources in the
 *   same browser, in JSON and in Atom: a substringof $filter, an $orderby, $inlinecount, paging by the
 *   next links, and the message of an error response;
 * - the OASIS converter odata-csdl, which must turn $metadata into CSDL JSON in strict mode.
 *
 * The browser part is skipped, with a warning, where /usr/bin/chromium is missing (CI installs it).
 * The pages and the UI5 files are answered by the browser's request interception on the service's
 * own origin, so the service itself serves nothing but OData.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestContext } from '../helper.ts';
import { skipWithout } from '../requirements.ts';
import { consumerEntries, FIXTURE_VARIABLES } from './consumer-fixture.ts';
import { CHROMIUM, launchChromium } from '../chromium.ts';

const SKIP_BROWSER = skipWithout(`Chromium at ${CHROMIUM}`, fs.existsSync(CHROMIUM), 'apt-get install chromium');

const UI5_SRC = path.resolve('node_modules/@openui5/sap.ui.core/src');
const DATAJS = path.join(UI5_SRC, 'sap/ui/thirdparty/datajs.js');
const BROWSER_READERS = path.resolve('test/odata/consumer-browser.js');
const ROOT = '/odata/v2/';
const ENTRIES = consumerEntries(250);

interface Exported {
  uuid: string;
  nonsense: string;
  original_nonsense?: string;
  timestamp: number;
}

/** An entity as the in-page readers return it (see consumer-browser.js). */
interface ReadEntity {
  uri?: string;
  id?: string;
  type?: string;
  uuid: string;
  nonsense: string;
  original_nonsense: string | null;
  timestamp: string;
  created: { kind: string; ms?: number; value?: unknown };
  multiline: boolean;
}

interface Walk {
  entities: ReadEntity[];
  pages: { url: string; count: string | number | undefined; size: number; next: string | null; body: string | null }[];
}

interface DatajsResult {
  service: { status: number; collections: { title: string; href: string }[] };
  metadata: {
    status: number;
    contentType: string;
    dataServiceVersion: string;
    namespace: string;
    entityType: string;
    key: string[];
    properties: { name: string; type: string; nullable: string }[];
    container: string;
    isDefault: string;
    entitySets: { name: string; entityType: string }[];
  };
  atom: Walk;
  json: Walk;
  filtered: Walk;
  count: { status: number; data: string };
}

interface DatajsOneResult {
  atom: ReadEntity;
  json: ReadEntity;
  error: { ok: boolean; status: number; message: string; contentType: string; rootName: string; rootNamespace: string; messageText: string | null; messageLang: string | null };
}

interface Ui5Result {
  version: string;
  metadata: { entityType: string; entitySet: string };
  pages: number;
  counts: (string | number)[];
  entities: ReadEntity[];
  boundNonsense: string | null;
  error: { message: string; statusCode: number; responseText: string } | null;
  messages: { type: string; message: string; technical: boolean }[];
}

/** The contract's model (docs/odata.md): name, EDM type and nullability of each property. */
const CONTRACT = [
  { name: 'uuid', type: 'Edm.Guid', nullable: false },
  { name: 'nonsense', type: 'Edm.String', nullable: false },
  { name: 'original_nonsense', type: 'Edm.String', nullable: true },
  { name: 'timestamp', type: 'Edm.Int64', nullable: false },
  { name: 'created', type: 'Edm.DateTime', nullable: false },
  { name: 'multiline', type: 'Edm.Boolean', nullable: false },
];

/** rawText is what every side agrees on: the raw text, whatever server-variable substitution picked. */
const rawText = (e: { nonsense: string; original_nonsense?: string | null }) => e.original_nonsense ?? e.nonsense;

/** What a delivered text may be: the raw text with each `$ANIMAL$` replaced by one of its values. */
function deliveredPattern(raw: string): RegExp {
  const values = `(?:${FIXTURE_VARIABLES[0]!.values.join('|')})`;
  const parts = raw.split(FIXTURE_VARIABLES[0]!.name).map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${parts.join(values)}$`, 's');
}

let t: TestContext;
let address: string;
let exported: Exported[];

beforeAll(async () => {
  t = await createTestApp({ entries: ENTRIES, variables: FIXTURE_VARIABLES, env: { OVERLOAD_MAX_EVENT_LOOP_DELAY: 'off' } });
  address = await t.app.listen({ host: '127.0.0.1', port: 0 });
  exported = (await t.app.inject('/api/v1/nonsense?format=json')).json();
  expect(exported).toHaveLength(ENTRIES.length);
});
afterAll(() => t?.close());

/**
 * expectSameAsExport compares what a consumer read with the export, in order: uuids, raw texts,
 * timestamps (Int64 read as strings, as OData v2 writes them), `created` read as a Date of the same
 * instant, the multiline flag as a boolean, the delivered text, and each entity's address.
 */
function expectSameAsExport(read: ReadEntity[], expected: Exported[], options: { addresses?: boolean } = {}) {
  expect(read.map((e) => e.uuid)).toEqual(expected.map((e) => e.uuid));
  expect(read.map(rawText)).toEqual(expected.map(rawText));
  expect(read.map((e) => e.original_nonsense)).toEqual(expected.map((e) => e.original_nonsense ?? null));
  expect(read.map((e) => e.timestamp)).toEqual(expected.map((e) => String(e.timestamp)));
  expect(read.map((e) => e.created)).toEqual(expected.map((e) => ({ kind: 'Date', ms: e.timestamp * 1000 })));
  expect(read.map((e) => e.multiline)).toEqual(expected.map((e) => /[\r\n]/.test(rawText(e))));
  for (const [i, e] of read.entries()) {
    const raw = rawText(expected[i]!);
    if (expected[i]!.original_nonsense === undefined) expect(e.nonsense).toBe(raw);
    else expect(e.nonsense).toMatch(deliveredPattern(raw));
  }
  if (options.addresses !== false) {
    expect(read.map((e) => e.uri)).toEqual(expected.map((e) => `${address}${ROOT}nonsense_list(guid'${e.uuid}')`));
    expect(new Set(read.map((e) => e.type))).toEqual(new Set(['NonsenseService.Nonsense']));
  }
}

/** The export's order of the feed with `$orderby=<key> desc`: uuid ascending breaks ties. */
function byDescending<T extends Exported>(list: T[], key: (e: T) => string | number): T[] {
  return [...list].sort((a, b) => {
    const [x, y] = [key(a), key(b)];
    if (x !== y) return x < y ? 1 : -1;
    return a.uuid < b.uuid ? -1 : 1;
  });
}

describe('on the wire: what the strict consumers look at', () => {
  it('writes Atom with m:type on every non-string value, local DateTimes, absolute ids and the count first', async () => {
    const res = await fetch(`${address}${ROOT}nonsense_list?$inlinecount=allpages`);
    const text = await res.text();
    expect(res.headers.get('content-type')).toBe('application/atom+xml;type=feed;charset=utf-8');
    const entries = text.match(/<entry>/g)!.length;
    expect(entries).toBe(100);
    for (const type of ['Guid', 'Int64', 'DateTime', 'Boolean']) expect(text.match(new RegExp(`m:type="Edm\\.${type}"`, 'g'))).toHaveLength(entries);
    // 1700374812 is 2023-11-19T06:20:12Z: Edm.DateTime is written without offset and without Z.
    expect(text).toContain('<d:created m:type="Edm.DateTime">2023-11-19T06:20:12</d:created>');
    expect(text).not.toMatch(/Edm\.DateTime">[^<]*(Z|[+-]\d\d:\d\d)</);
    expect(text).toContain(`<id>${address}${ROOT}nonsense_list(guid&apos;${ENTRIES[0]!.uuid}&apos;)</id>`);
    expect(text.indexOf('<m:count>250</m:count>')).toBeGreaterThan(0);
    expect(text.indexOf('<m:count>')).toBeLessThan(text.indexOf('<entry>'));
  });

  it('writes JSON dates as "\\/Date(ms)\\/" and serves $metadata as application/xml', async () => {
    const json = await (await fetch(`${address}${ROOT}nonsense_list?$format=json&$top=3`)).text();
    expect(json).toContain('"created":"\\/Date(1700374812000)\\/"');
    expect(json.match(/"created":"\\\/Date\(\d+\)\\\/"/g)).toHaveLength(3);
    const metadata = await fetch(`${address}${ROOT}$metadata`);
    expect(metadata.headers.get('content-type')).toMatch(/^application\/xml(;|$)/);
  });

  it('keeps every query option in next links and carries the remaining $top', async () => {
    const query = "$filter=substringof('sock',nonsense)&$orderby=nonsense desc&$select=uuid,nonsense&$inlinecount=allpages&$format=json&$top=150";
    const page = (await (await fetch(`${address}${ROOT}nonsense_list?${query}`)).json()) as { d: { __next: string } };
    const next = new URL(page.d.__next);
    expect(next.origin + next.pathname).toBe(`${address}${ROOT}nonsense_list`);
    expect(Object.fromEntries(next.searchParams)).toEqual({
      $filter: "substringof('sock',nonsense)",
      $orderby: 'nonsense desc',
      $select: 'uuid,nonsense',
      $inlinecount: 'allpages',
      $format: 'json',
      $top: '50',
      $skip: '100',
    });
  });
});

describe('odata-csdl (OASIS CSDL XML to JSON) reads $metadata', () => {
  it('converts in strict mode and finds the contract', async () => {
    const require = createRequire(import.meta.url);
    const { xml2json } = require('odata-csdl') as { xml2json: (xml: string, options: { strict: boolean; messages?: unknown[] }) => Record<string, unknown> };
    const xml = await (await fetch(`${address}${ROOT}$metadata`)).text();
    const messages: unknown[] = [];
    const csdl = xml2json(xml, { strict: true, messages });
    expect(messages).toEqual([]);
    expect(csdl.$Version).toBe('2.0');
    expect(csdl.$EntityContainer).toBe('NonsenseService.NonsenseEntities');
    const schema = csdl.NonsenseService as Record<string, Record<string, unknown>>;
    const type = schema.Nonsense!;
    expect(type.$Kind).toBe('EntityType');
    expect(type.$Key).toEqual(['uuid']);
    // CSDL JSON leaves out defaults: Edm.String as the type, false as $Nullable.
    const properties = Object.entries(type)
      .filter(([name]) => !name.startsWith('$'))
      .map(([name, p]) => {
        const property = p as { $Type?: string; $Nullable?: boolean };
        return { name, type: property.$Type ?? 'Edm.String', nullable: property.$Nullable ?? false };
      });
    expect(properties).toEqual(CONTRACT);
    expect(schema.NonsenseEntities).toEqual({ $Kind: 'EntityContainer', nonsense_list: { $Collection: true, $Type: 'NonsenseService.Nonsense' } });
  });
});

describe.skipIf(SKIP_BROWSER)('datajs and the UI5 ODataModel in Chromium read the feed as the export', () => {
  let browser: Browser;
  let served = 0;

  /** openPage opens a page of the service's origin; `ui5` bootstraps OpenUI5 from the package sources. */
  async function openPage(ui5: boolean): Promise<Page> {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(String(error)));
    await page.route(`${address}/__consumers/**`, (route) => {
      const file = new URL(route.request().url()).pathname.slice('/__consumers/'.length);
      if (file === 'index.html') {
        const bootstrap = ui5
          ? '<script id="sap-ui-bootstrap" src="ui5/sap-ui-core.js" data-sap-ui-async="true" data-sap-ui-compat-version="edge" data-sap-ui-log-level="WARNING"></script>'
          : '';
        return route.fulfill({ contentType: 'text/html;charset=utf-8', body: `<!doctype html><meta charset="utf-8"><title>OData consumers</title>${bootstrap}` });
      }
      // The whole src folder of @openui5/sap.ui.core: UI5 loads each module by its path.
      const local = path.join(UI5_SRC, file.replace(/^ui5\//, ''));
      if (file.startsWith('ui5/') && local.startsWith(UI5_SRC + path.sep) && fs.statSync(local, { throwIfNoEntry: false })?.isFile()) {
        served++;
        return route.fulfill({ path: local });
      }
      // sap-ui-version.json and compiled theme CSS are not in the npm package; the model needs neither.
      return route.fulfill({ status: 404, contentType: 'text/plain', body: 'not in the package' });
    });
    await page.goto(`${address}/__consumers/index.html`);
    if (ui5) await page.waitForFunction('window.sap && window.sap.ui && typeof window.sap.ui.require === "function"');
    else await page.addScriptTag({ path: DATAJS });
    await page.addScriptTag({ path: BROWSER_READERS });
    expect(errors).toEqual([]);
    return page;
  }

  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(() => browser?.close());

  it('datajs reads the service document, $metadata, every Atom and JSON page, $count, one entity and an error', { timeout: 45_000 }, async () => {
    const page = await openPage(false);
    const read = (await page.evaluate(`consumerReaders.datajs(${JSON.stringify(ROOT)})`)) as DatajsResult;

    expect(read.service).toEqual({ status: 200, collections: [{ title: 'nonsense_list', href: `${address}${ROOT}nonsense_list` }] });

    expect(read.metadata).toEqual({
      status: 200,
      contentType: 'application/xml;charset=utf-8',
      dataServiceVersion: '2.0',
      namespace: 'NonsenseService',
      entityType: 'Nonsense',
      key: ['uuid'],
      properties: CONTRACT.map((p) => ({ ...p, nullable: String(p.nullable) })),
      container: 'NonsenseEntities',
      isDefault: 'true',
      entitySets: [{ name: 'nonsense_list', entityType: 'NonsenseService.Nonsense' }],
    });

    // Atom without metadata: Edm.DateTime becomes a Date and Edm.Boolean a boolean only through m:type.
    expect(read.atom.pages.map((p) => [p.size, p.count])).toEqual([[100, 250], [100, 250], [50, 250]]);
    expect(read.atom.pages.slice(1).every((p) => new URL(p.url).searchParams.get('$inlinecount') === 'allpages')).toBe(true);
    // datajs takes the entry's address (__metadata.uri, compared here) from the Atom <id>.
    expectSameAsExport(read.atom.entities, exported);

    // Verbose JSON with the metadata: the escaped "\/Date(ms)\/" strings become Dates.
    expect(read.json.pages.map((p) => [p.size, p.count])).toEqual([[100, '250'], [100, '250'], [50, '250']]);
    expect(read.json.pages.slice(1).every((p) => new URL(p.url).searchParams.get('$format') === 'json')).toBe(true);
    for (const p of read.json.pages) expect(p.body!.match(/"created":"\\\/Date\(\d+\)\\\/"/g)).toHaveLength(p.size);
    expectSameAsExport(read.json.entities, exported);
    expect(read.json.entities.map((e) => e.id)).toEqual(read.json.entities.map((e) => e.uri));

    // Filter, order, projection and $top survive the next links ($skip-based for this order; an order
    // by length, so that the expected order does not depend on the database's collation).
    const sockCount = exported.filter((e) => rawText(e).includes('sock')).length;
    const withSock = byDescending(
      exported.filter((e) => rawText(e).includes('sock')),
      (e) => [...rawText(e)].length,
    ).slice(0, 150);
    expect(read.filtered.pages.map((p) => [p.size, Number(p.count)])).toEqual([[100, sockCount], [50, sockCount]]);
    expect(new URL(read.filtered.pages[1]!.url).searchParams.get('$top')).toBe('50');
    expect(read.filtered.entities.map((e) => e.uuid)).toEqual(withSock.map((e) => e.uuid));
    expect(read.filtered.entities.map(rawText)).toEqual(withSock.map(rawText));

    expect(read.count).toEqual({ status: 200, data: String(exported.length) });

    for (const wanted of [exported.find((e) => rawText(e).startsWith('Ask $AUTHOR$'))!, exported.find((e) => rawText(e).startsWith('Windows line'))!]) {
      const one = (await page.evaluate(`consumerReaders.datajsOne(${JSON.stringify(ROOT)}, ${JSON.stringify(wanted.uuid)})`)) as DatajsOneResult;
      expectSameAsExport([one.atom], [wanted]);
      expectSameAsExport([one.json], [wanted]);
      expect(one.error).toEqual({
        ok: false,
        status: 400,
        message: 'HTTP request failed',
        contentType: 'application/xml;charset=utf-8',
        rootName: 'error',
        rootNamespace: 'http://schemas.microsoft.com/ado/2007/08/dataservices/metadata',
        messageText: expect.stringMatching(/^Unknown property 'bogus' \(at character 18\)/),
        messageLang: 'en-US',
      });
    }
    await page.close();
  });

  it.each([
    ['JSON', true],
    ['Atom', false],
  ])('the OpenUI5 ODataModel (%s) filters, orders, counts, pages and shows the service error message', { timeout: 45_000 }, async (_label, json) => {
    const page = await openPage(true);
    for (const word of ['sock', "O'Reilly", '& chips']) {
      const read = (await page.evaluate(`consumerReaders.ui5(${JSON.stringify(ROOT)}, ${json}, ${JSON.stringify(word)})`)) as Ui5Result;
      expect(read.version).toMatch(/^1\.\d+\.\d+$/);
      expect(read.metadata).toEqual({ entityType: 'Nonsense', entitySet: 'nonsense_list' });
      const expected = byDescending(
        exported.filter((e) => rawText(e).includes(word)),
        (e) => e.timestamp,
      );
      expect(expected.length).toBeGreaterThan(0);
      expect(read.pages).toBe(Math.max(1, Math.ceil(expected.length / 100)));
      // The model gives __count as it is in the payload: a string in JSON, a number from Atom.
      expect(read.counts.map(Number)).toEqual(Array(read.pages).fill(expected.length));
      expectSameAsExport(read.entities, expected);
      expect(read.boundNonsense).toBe(read.entities[0]!.nonsense);

      expect(read.error).toMatchObject({ statusCode: 400 });
      expect(read.error!.responseText).toContain(json ? '{"error":{"code":"","message":{"lang":"en-US","value":"Unknown property' : '<error xmlns="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"><code/><message xml:lang="en-US">Unknown property');
      // The model's message handling shows the service's own text, not a generic one.
      expect(read.messages).toEqual([{ type: 'Error', message: expect.stringMatching(/^Unknown property 'bogus' \(at character 1\); the properties are uuid, /), technical: true }]);
    }
    expect(served).toBeGreaterThan(50);
    await page.close();
  });
});
