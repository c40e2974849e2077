/**
 * The bounds of an OData request, through HTTP on the engine of the run: every limit answers 400 in
 * the OData error format and names itself; characters no entry can hold and integers up to the safe
 * range answer 400 or the right result, never 500.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_NESTING, MAX_NODES, MAX_OPTION_LENGTH, MAX_ORDER_KEYS, MAX_PARAMETERS } from '../../src/domain/odata/limits.ts';
import odataRoutes from '../../src/routes/odata/index.ts';
import { ReadWorkers } from '../../src/services/read-workers/index.ts';
import { createTestApp, entry, type TestContext } from '../helper.ts';

const T0 = 1_700_000_000;
const entries = [entry('short', T0), entry('a little longer', T0 + 1), entry('Feed the $V0$ please', T0 + 2)];
// Thirty server variables: every use of original_nonsense then tests the text for 34 tokens.
const variables = Array.from({ length: 30 }, (_, i) => ({ name: `$V${i}$`, description: 'A variable.', values: ['x'] }));

describe('OData limits', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ entries, variables });
  });
  afterAll(() => t.close());

  const url = (options: Record<string, string>) =>
    `/odata/v2/nonsense_list?${Object.entries(options).map(([name, value]) => `${name}=${encodeURIComponent(value)}`).join('&')}`;

  /** refused asks in JSON and in Atom and expects a 400 OData error; returns the message. */
  async function refused(options: Record<string, string>): Promise<string> {
    const json = await t.app.inject(url({ ...options, $format: 'json' }));
    expect(json.statusCode, json.body).toBe(400);
    expect(json.headers['content-type']).toBe('application/json;charset=utf-8');
    expect(json.headers.dataserviceversion).toBe('2.0');
    const xml = await t.app.inject(url(options));
    expect(xml.statusCode, xml.body).toBe(400);
    expect(xml.headers['content-type']).toBe('application/xml;charset=utf-8');
    expect(xml.body).toMatch(/^<\?xml[^>]*\?><error xmlns="http:\/\/schemas.microsoft.com\/ado\/2007\/08\/dataservices\/metadata">/);
    return json.json().error.message.value as string;
  }

  async function uuids(options: Record<string, string>): Promise<string[]> {
    const res = await t.app.inject(url({ ...options, $format: 'json' }));
    expect(res.statusCode, res.body).toBe(200);
    return (res.json().d.results as { uuid: string }[]).map((e) => e.uuid);
  }

  it('takes an expression of exactly the node limit and refuses one more', async () => {
    // 25 comparisons of three nodes joined by 24 ors: 99 nodes; the not makes 100.
    const chain = Array.from({ length: 25 }, (_, i) => `timestamp lt ${T0 - i}`).join(' or ');
    expect(MAX_NODES).toBe(100);
    expect(await uuids({ $filter: `not (${chain})` })).toHaveLength(3);
    expect(await refused({ $filter: `not not (${chain})` })).toMatch(/more than 100 operators/);
  });

  it('names each limit in its refusal', async () => {
    const comparisons = Math.ceil(MAX_NODES / 4) + 1;
    const many = Array.from({ length: comparisons }, (_, i) => `timestamp gt ${i}`).join(' or ');
    expect(await refused({ $filter: many })).toMatch(new RegExp(`\\$filter .*more than ${MAX_NODES} operators, functions, properties and literals \\(the limit\\)`));
    expect(await refused({ $filter: `${'('.repeat(MAX_NESTING + 1)}multiline${')'.repeat(MAX_NESTING + 1)}` })).toMatch(
      new RegExp(`\\$filter .*nested more than ${MAX_NESTING} levels deep \\(the limit\\)`),
    );
    expect(await refused({ $filter: `nonsense eq '${'x'.repeat(MAX_OPTION_LENGTH)}'` })).toMatch(/\$filter .*longer than 2000 characters \(the limit\)/);
    expect(await refused({ $orderby: Array.from({ length: MAX_ORDER_KEYS + 1 }, () => 'timestamp').join(',') })).toMatch(
      new RegExp(`\\$orderby has more than ${MAX_ORDER_KEYS} keys \\(the limit\\)`),
    );
    // 34 known tokens: twelve uses of original_nonsense need more than 400 parameters.
    const uses = Math.ceil(MAX_PARAMETERS / 34) + 1;
    const heavy = Array.from({ length: uses }, (_, i) => `original_nonsense eq '${i}'`).join(' or ');
    expect(await refused({ $filter: heavy })).toMatch(new RegExp(`\\$filter needs more than ${MAX_PARAMETERS} bound parameters \\(the limit\\)`));
    // A nullable key is ordered by its is-null test and then itself: 68 parameters each here.
    expect(await uuids({ $orderby: Array.from({ length: 5 }, () => 'original_nonsense').join(',') })).toHaveLength(3);
    expect(await refused({ $orderby: Array.from({ length: 6 }, () => 'original_nonsense').join(',') })).toMatch(/\$orderby needs more than 400 bound parameters \(the limit\)/);
  });

  it('refuses NUL in a string literal, naming the option, instead of failing in the database', async () => {
    expect(await refused({ $filter: "nonsense eq 'a\u0000b'" })).toMatch(/Syntax error in \$filter at character 13: .*NUL character/);
    expect(await refused({ $orderby: "concat(nonsense, '\u0000')" })).toMatch(/Syntax error in \$orderby .*NUL character/);
    expect(await refused({ $filter: "substringof('\u0000', nonsense)" })).toMatch(/NUL/);
  });

  it('refuses an option whose percent-encoding is broken, naming it', async () => {
    for (const raw of ["nonsense%20eq%20'%ED%A0%80'", "nonsense%20eq%20'%F0%9F%98'", "nonsense%20eq%20'%zz'"]) {
      const res = await t.app.inject(`/odata/v2/nonsense_list?$format=json&$filter=${raw}`);
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().error.message.value).toMatch(/The option \$filter is not valid percent-encoded UTF-8/);
    }
  });

  it('answers integers up to the safe range exactly and refuses larger ones, on functions too', async () => {
    expect(await uuids({ $filter: 'length(nonsense) gt 9007199254740991' })).toEqual([]);
    expect(await uuids({ $filter: 'length(nonsense) lt 9007199254740991' })).toHaveLength(3);
    expect(await uuids({ $filter: 'length(nonsense) ge -9007199254740991' })).toHaveLength(3);
    expect(await uuids({ $filter: 'length(nonsense) eq 2147483648' })).toEqual([]);
    expect(await uuids({ $filter: 'length(nonsense) ne 3000000000L' })).toHaveLength(3);
    expect(await uuids({ $filter: 'indexof(nonsense, \'e\') lt 4294967296' })).toHaveLength(3);
    expect(await uuids({ $filter: 'timestamp lt 9007199254740991' })).toHaveLength(3);
    expect(await uuids({ $filter: "substring(nonsense, 3000000000) eq ''" })).toHaveLength(3);
    expect(await uuids({ $filter: "substring(nonsense, 0, 9007199254740991) eq 'short'" })).toEqual([entries[0]!.uuid]);
    expect(await uuids({ $filter: "substring(nonsense, 2147483647, 2147483647) eq ''" })).toHaveLength(3);
    expect(await uuids({ $orderby: 'indexof(nonsense, \'e\') desc', $filter: 'length(nonsense) le 9007199254740991' })).toHaveLength(3);
    expect(await refused({ $filter: 'length(nonsense) gt 9007199254740992' })).toMatch(/out of range/);
    expect(await refused({ $filter: 'length(nonsense) gt 99999999999999999999999999' })).toMatch(/out of range/);
    expect(await refused({ $top: '9007199254740991' })).toMatch(/\$top must be a non-negative integer/);
    expect(await refused({ $skip: '99999999999999999999' })).toMatch(/\$skip must be a non-negative integer/);
  });
});

describe('OData time limit', () => {
  // 3,000 entries and a filter that builds 2 kB of text per row: far more than 1 ms of database work.
  const many = Array.from({ length: 3000 }, (_, i) => entry(`Entry ${i} with enough words to make concatenation cost something`, T0 + i));
  const wide = (depth: number): string => (depth === 0 ? 'nonsense' : `concat(${wide(depth - 1)},${wide(depth - 1)})`);
  const heavy = encodeURIComponent(`indexof(${wide(5)},'zq') eq 7`);
  let t: TestContext;
  let tight: FastifyInstance;
  /** The same, its reads in a read worker (an SQLite file), or null on PostgreSQL. */
  let tightInWorker: FastifyInstance | null = null;
  const tightApp = async (workers: ReadWorkers | null) => {
    const app = Fastify();
    app.decorate('config', t.config);
    app.decorate('storage', t.storage);
    if (workers !== null) {
      app.decorate('readWorkers', workers);
      app.addHook('onClose', () => workers.close());
    }
    await app.register(odataRoutes, { prefix: '/odata/v2', timeLimitMs: 1 });
    return app;
  };
  beforeAll(async () => {
    t = await createTestApp({ entries: many });
    tight = await tightApp(null);
    const workers = ReadWorkers.forDatabase(t.config.database);
    if (workers !== null) tightInWorker = await tightApp(workers);
  });
  afterAll(async () => {
    await tight.close();
    await tightInWorker?.close();
    await t.close();
  });

  it('refuses with 400, naming the limit, a request whose statements run past it, on every resource', async () => {
    for (const app of [tight, tightInWorker]) {
      if (app === null) continue;
      for (const url of [
        `/odata/v2/nonsense_list?$filter=${heavy}`,
        `/odata/v2/nonsense_list?$filter=${heavy}&$inlinecount=allpages&$format=json`,
        `/odata/v2/nonsense_list?all=true&$filter=${heavy}`,
        `/odata/v2/nonsense_list/$count?$filter=${heavy}`,
      ]) {
        const res = await app.inject(url);
        expect(res.statusCode, url).toBe(400);
        expect(res.headers.dataserviceversion).toBe('2.0');
        expect(res.body, url).toContain('The request needs more than 1 ms of database time (the limit)');
      }
    }
  });

  it('answers the same request within the default limit, with every row tested', async () => {
    const res = await t.app.inject(`/odata/v2/nonsense_list/$count?$filter=${heavy}`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toBe('0');
    const all = await t.app.inject(`/odata/v2/nonsense_list/$count?$filter=${encodeURIComponent(`indexof(${wide(5)},'Entry') eq 0`)}`);
    expect(all.body).toBe('3000');
    // Light requests pass even the tight limit: a page read from the index stops after 101 rows. A
    // loaded host can stall one statement past a millisecond, so the page gets five tries; a limit
    // that refused light requests would refuse all five.
    const light: number[] = [];
    for (let i = 0; i < 5 && !light.includes(200); i++) light.push((await tight.inject('/odata/v2/nonsense_list?$top=5')).statusCode);
    expect(light).toContain(200);
    // A whole feed by index without a condition reads each page by a seek: it has no limit, so a busy
    // machine cannot cut a long download short.
    const whole = await tight.inject('/odata/v2/nonsense_list?all=true&$format=json');
    expect(whole.statusCode).toBe(200);
    expect(whole.json().d.results).toHaveLength(3000);
  });
});
