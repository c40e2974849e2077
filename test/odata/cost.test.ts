/**
 * What an OData request may cost, through HTTP on the engine of the run: random `$filter` shapes
 * (hostile ones among them: deep nesting, wide concatenations, chains at the node limit, an or-chain
 * whose cheap indexed branch does not save the rest), expression orders, `$skip`, `$top`,
 * `$inlinecount` and whole feeds, over a few thousand entries of realistic text (fast-check, fixed
 * seed). Each request either answers 200 within its time limits, with slack for a shared machine, or
 * is refused in the OData error format: 400 past a limit, 429 with Retry-After once its address has
 * spent its database time, 503 when the read queue is full. Never another 5xx, never a hang.
 */
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_NESTING, MAX_NODES, TIME_LIMIT_MS, WALK_PAGE_TIME_LIMIT_MS } from '../../src/domain/odata/limits.ts';
import { textKey } from '../../src/domain/text.ts';
import type { NewEntry } from '../../src/storage/entries.ts';
import { STREAM_PAGE_SIZE } from '../../src/storage/entry-query.ts';
import { createTestApp, type TestContext } from '../helper.ts';
import { mulberry32 } from '../seeded-random.ts';

const SEED = 20_250_301;
const RUNS = 100;
const COUNT = 4_000;

/**
 * Slack over the time limits for what is not database time (serialising, the worker's queue, the
 * OpenAPI check of every answer) and for a loaded host. Still far below anything that grows with the
 * data: a filter the limit failed to stop takes many seconds here, a hang forever.
 */
const SLACK_MS = 2_500;
/** A request that has not answered this long after its bound is a hang, reported as such instead of a test timeout. */
const HANG_MS = 10_000;

const VARIABLES = [
  { name: '$ANIMAL$', description: 'An animal.', values: ['cat', 'Kätzchen', 'капибара', '🦔'] },
  { name: '$COLOR$', description: 'A colour.', values: ['red', 'bleu', '緑'] },
  { name: '$FOOD$', description: 'A food.', values: ['soup', 'crème brûlée'] },
];
const TOKENS = [...VARIABLES.map((v) => v.name), '$AUTHOR$', '$SERVER$', '$CHANNEL$', '${app_name}'];
const WORDS = [
  'the', 'a', 'cat', 'sat', 'on', 'my', 'keyboard', 'again', 'and', 'then', 'nobody', 'knew', 'why', 'it', 'was', 'purple',
  'Tuesday', 'banana', 'elevator', 'whispered', 'loudly', 'seven', 'spoons', 'ago', 'never', 'trust', 'a', 'duck', 'with', 'opinions',
  ':blobcat:', '<b>', '&amp;', "don't", '"quoted"', 'e', 'E', 'zq',
];
const FOREIGN = ['café', 'naïve', 'Straße', 'smörgåsbord', 'Привет', 'мир', 'Ελληνικά', 'שלום', 'مرحبا', '日本語', '猫が好き', '한국어', 'ภาษาไทย', '😀', '🦆'];
const T_START = 1_420_070_400; // 2015-01-01
const T_END = 1_735_603_200; // 2024-12-31

/**
 * entries builds COUNT distinct texts: mostly a sentence of English-like words, some long, some on
 * several lines, some in or with other scripts, some with server or client-side variables.
 */
function entries(): NewEntry[] {
  const random = mulberry32(SEED);
  const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)]!;
  const hex = (n: number) => Array.from({ length: n }, () => Math.floor(random() * 16).toString(16)).join('');
  const seen = new Set<string>();
  const made: NewEntry[] = [];
  while (made.length < COUNT) {
    // Lengths from an exponential tail over a short base, and a few near the 2,000 allowed: mean ~110 characters.
    const target = random() < 0.01 ? 1_500 + Math.floor(random() * 450) : 15 + Math.floor(-Math.log(1 - random()) * 80);
    const multiline = random() < 0.12;
    const foreign = random() < 0.2;
    const variable = random() < 0.15;
    let text = '';
    while (text.length < target) {
      const word = variable && random() < 0.1 ? pick(TOKENS) : foreign && random() < 0.4 ? pick(FOREIGN) : pick(WORDS);
      const gap = text === '' ? '' : multiline && random() < 0.15 ? pick(['\n', '\r\n', '\n\n']) : ' ';
      text += gap + word;
    }
    text = `${text[0]!.toUpperCase()}${text.slice(1)}${pick(['.', '!', '?', '', ' …'])}`;
    if (seen.has(textKey(text))) continue;
    seen.add(textKey(text));
    made.push({
      uuid: `${hex(8)}-${hex(4)}-4${hex(3)}-${pick(['8', '9', 'a', 'b'])}${hex(3)}-${hex(12)}`,
      text,
      timestamp: T_START + Math.floor(random() * (T_END - T_START)),
    });
  }
  return made;
}

const quote = (value: string) => `'${value.replace(/'/g, "''")}'`;
const needle = fc.constantFrom('cat', 'e', 'zq', '', ' ', "don't", 'é', 'Straße', 'мир', '猫', '😀', '$ANIMAL$', '$AUTHOR$', '\n', 'never trust').map(quote);
const timestamp = fc.integer({ min: T_START - 86_400, max: T_END + 86_400 });

/** Random expressions of every type the language has, shallow, mostly well typed. */
const { bool: randomFilter, str: randomString, int: randomInt } = fc.letrec<{ bool: string; str: string; int: string }>((tie) => {
  const str = tie('str');
  const int = tie('int');
  const bool = tie('bool');
  const small = fc.oneof(fc.integer({ min: 0, max: 12 }), fc.constant(2_000), fc.constant(2_147_483_647));
  return {
    str: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.constantFrom('nonsense', 'original_nonsense'),
      needle,
      str.map((a) => `tolower(${a})`),
      str.map((a) => `toupper(${a})`),
      str.map((a) => `trim(${a})`),
      fc.tuple(str, str).map(([a, b]) => `concat(${a},${b})`),
      fc.tuple(str, small, fc.option(small, { nil: undefined })).map(([a, start, length]) => `substring(${a},${start}${length === undefined ? '' : `,${length}`})`),
    ),
    int: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.constant('timestamp'),
      fc.integer({ min: -3, max: 300 }).map(String),
      str.map((a) => `length(${a})`),
      fc.tuple(str, str).map(([a, b]) => `indexof(${a},${b})`),
    ),
    bool: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.constant('multiline'),
      timestamp.map((t) => `timestamp lt ${t}`),
      fc.constantFrom("created ge datetime'2019-06-01T00:00:00'", "created lt datetime'2016-02-29T12:00:00Z'", 'original_nonsense eq null', 'original_nonsense ne null'),
      fc.tuple(fc.constantFrom('substringof', 'startswith', 'endswith'), str, str).map(([f, a, b]) => `${f}(${a},${b})`),
      fc.tuple(str, fc.constantFrom('eq', 'ne', 'lt', 'ge'), str).map(([a, op, b]) => `${a} ${op} ${b}`),
      fc.tuple(int, fc.constantFrom('eq', 'ne', 'gt', 'le'), int).map(([a, op, b]) => `${a} ${op} ${b}`),
      bool.map((a) => `not (${a})`),
      fc.tuple(bool, fc.constantFrom('and', 'or'), bool).map(([a, op, b]) => `(${a}) ${op} (${b})`),
      fc.tuple(bool, fc.constantFrom('eq', 'ne'), bool).map(([a, op, b]) => `(${a}) ${op} (${b})`),
    ),
  };
});

/** A concatenation tree of 2^depth leaves: each level doubles the text built per row. */
const wide = (depth: number, leaf: string): string => (depth === 0 ? leaf : `concat(${wide(depth - 1, leaf)},${wide(depth - 1, leaf)})`);

/** Shapes built to cost as much as the limits allow, and just past them. */
const hostileFilter = fc.oneof(
  // Case functions nested around the nesting limit.
  fc.tuple(fc.integer({ min: MAX_NESTING - 6, max: MAX_NESTING + 1 }), needle).map(([depth, n]) => {
    let inner = 'nonsense';
    for (let i = 0; i < depth; i++) inner = `${['tolower', 'toupper', 'trim'][i % 3]}(${inner})`;
    return `substringof(${n},${inner})`;
  }),
  // Parentheses and nots around the nesting limit.
  fc.tuple(fc.integer({ min: MAX_NESTING - 3, max: MAX_NESTING + 1 }), fc.boolean()).map(([depth, nots]) =>
    nots ? `${'not '.repeat(depth)}multiline` : `${'('.repeat(depth)}substringof('cat',nonsense)${')'.repeat(depth)}`,
  ),
  // Wide concatenations: up to 32 copies of every text per row, one level past the node limit.
  fc.tuple(fc.integer({ min: 3, max: 6 }), fc.constantFrom('nonsense', 'original_nonsense', 'tolower(nonsense)'), needle).map(
    ([depth, leaf, n]) => `indexof(${wide(depth, leaf)},${n}) eq 7`,
  ),
  // A cheap indexed branch or'ed with an expensive rest: the index cannot narrow an or.
  fc.tuple(timestamp, fc.array(needle, { minLength: 5, maxLength: 5 })).map(
    ([t, ns]) => `timestamp lt ${t} or (${ns.map((n) => `substringof(${n},concat(concat(original_nonsense,nonsense),tolower(nonsense)))`).join(' or ')})`,
  ),
  // Chains of substringof around the node limit (3 nodes each, one per or).
  fc.tuple(fc.integer({ min: Math.floor(MAX_NODES / 4) - 3, max: Math.ceil(MAX_NODES / 4) + 1 }), needle).map(([n, first]) =>
    Array.from({ length: n }, (_, i) => `substringof(${i === 0 ? first : quote(`w${i}`)},${i % 2 ? 'nonsense' : 'tolower(nonsense)'})`).join(' or '),
  ),
  // Many uses of original_nonsense: one parameter per known variable each, around the parameter limit.
  fc.integer({ min: 8, max: 60 }).map((n) => Array.from({ length: n }, (_, i) => `original_nonsense eq ${quote(`v${i}`)}`).join(' or ')),
  // A random expression under a cheap timestamp branch.
  fc.tuple(timestamp, randomFilter).map(([t, rest]) => `timestamp lt ${t} or (${rest})`),
);

const orderBy = fc.oneof(
  fc.constantFrom('timestamp', 'timestamp desc', 'created desc,uuid', 'uuid', 'nonsense', 'nonsense desc', 'original_nonsense', 'length(nonsense) desc,uuid'),
  fc.constantFrom(`tolower(${wide(3, 'nonsense')})`, "indexof(nonsense,'e'),timestamp desc", 'multiline,timestamp', 'substringof(\'cat\',nonsense) desc'),
  fc.array(fc.tuple(fc.oneof(randomString, randomInt), fc.constantFrom('', ' asc', ' desc')), { minLength: 1, maxLength: 3 }).map((keys) => keys.map(([k, d]) => `${k}${d}`).join(',')),
  // Around the key limit.
  fc.integer({ min: 7, max: 9 }).map((n) => Array.from({ length: n }, (_, i) => (i % 2 ? 'nonsense desc' : 'length(nonsense)')).join(',')),
);

/** One request to the feed (or its /$count) of the entity set. */
interface Request {
  filter?: string | undefined;
  orderBy?: string;
  skip?: number;
  top?: number;
  inlineCount?: boolean;
  all?: boolean;
  json: boolean;
  count?: boolean;
  client: string;
}

const request: fc.Arbitrary<Request> = fc.record(
  {
    // Now and then none: an expression order alone sorts every entry.
    filter: fc.option(fc.oneof({ weight: 2, arbitrary: randomFilter }, { weight: 3, arbitrary: hostileFilter }), { nil: undefined, freq: 8 }),
    orderBy,
    skip: fc.constantFrom(0, 1, 99, COUNT - 1, COUNT + 500, 1_000_000, 2_147_483_647),
    top: fc.constantFrom(0, 1, 5, 100, 101, 1_000, 100_000),
    inlineCount: fc.constant(true),
    all: fc.constant(true),
    json: fc.boolean(),
    count: fc.constantFrom(false, false, false, true),
    // One greedy address sends two requests in three and spends its budget early; the others rarely do.
    client: fc.oneof({ weight: 2, arbitrary: fc.constant('198.51.100.1') }, { weight: 1, arbitrary: fc.constantFrom('198.51.100.2', '2001:db8::3', '::ffff:203.0.113.4') }),
  },
  { requiredKeys: ['filter', 'json', 'client'] },
);

function urlOf(r: Request): string {
  const options: [string, string][] = [];
  if (r.filter !== undefined) options.push(['$filter', r.filter]);
  if (r.orderBy !== undefined && !r.count) options.push(['$orderby', r.orderBy]);
  if (r.skip !== undefined) options.push(['$skip', String(r.skip)]);
  if (r.top !== undefined) options.push(['$top', String(r.top)]);
  if (r.inlineCount && !r.count) options.push(['$inlinecount', 'allpages']);
  if (r.all && !r.count) options.push(['all', 'true']);
  if (r.json) options.push(['$format', 'json']);
  return `/odata/v2/nonsense_list${r.count ? '/$count' : ''}?${options.map(([name, value]) => `${name}=${encodeURIComponent(value)}`).join('&')}`;
}

/** The wall-clock bound of a request: its time limits, a later walk page's for each page after the first, and slack. */
function boundOf(r: Request): number {
  if (!r.all || r.count) return TIME_LIMIT_MS + SLACK_MS;
  const pages = Math.max(1, Math.ceil(Math.min(COUNT, r.top ?? COUNT) / STREAM_PAGE_SIZE));
  return TIME_LIMIT_MS + SLACK_MS + (pages - 1) * WALK_PAGE_TIME_LIMIT_MS;
}

/** within injects a request, failing it as a hang when no answer comes by HANG_MS after its bound. */
async function within(t: TestContext, url: string, client: string, bound: number): Promise<LightMyRequestResponse> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer after ${bound + HANG_MS} ms: ${url}`)), bound + HANG_MS);
  });
  try {
    return await Promise.race([t.app.inject({ url, remoteAddress: client }), hang]);
  } finally {
    clearTimeout(timer);
  }
}

/** expectODataError checks a refusal's body and type: OData's XML error, or its JSON error when JSON was asked for. */
function expectODataError(res: LightMyRequestResponse, json: boolean, where: string): string {
  expect(res.headers.dataserviceversion, where).toBe('2.0');
  if (json) {
    expect(res.headers['content-type'], where).toBe('application/json;charset=utf-8');
    const body = res.json<{ error: { code: unknown; message: { lang: unknown; value: unknown } } }>();
    expect(body, where).toEqual({ error: { code: expect.any(String), message: { lang: expect.any(String), value: expect.any(String) } } });
    return body.error.message.value as string;
  }
  expect(res.headers['content-type'], where).toBe('application/xml;charset=utf-8');
  const match = /^<\?xml[^>]*\?><error xmlns="http:\/\/schemas\.microsoft\.com\/ado\/2007\/08\/dataservices\/metadata"><code(?:\/>|>[^<]*<\/code>)<message xml:lang="[^"]+">([^<]*)<\/message><\/error>\n?$/.exec(res.body);
  expect(match, `${where}\n${res.body.slice(0, 300)}`).not.toBeNull();
  return match![1]!;
}

/** expectComplete checks that a 200 is a whole document of what was asked for. */
function expectComplete(res: LightMyRequestResponse, r: Request, where: string): void {
  if (r.count) {
    expect(res.body, where).toMatch(/^\d+$/);
    return;
  }
  const wanted = Math.max(0, Math.min(r.all ? COUNT : 100, r.top ?? COUNT, COUNT - (r.skip ?? 0)));
  if (r.json) {
    const { d } = res.json<{ d: { results: unknown[]; __count?: string } }>();
    expect(d.results.length, where).toBeLessThanOrEqual(wanted);
    if (r.inlineCount) expect(Number(d.__count), where).toBeGreaterThanOrEqual(d.results.length);
  } else {
    expect(res.body.startsWith('<?xml'), where).toBe(true);
    expect(res.body.trimEnd().endsWith('</feed>'), `${where}: the feed ends with ${JSON.stringify(res.body.slice(-80))}`).toBe(true);
    expect(res.body.split('</entry>').length - 1, where).toBeLessThanOrEqual(wanted);
  }
}

/**
 * checked checks one answer against everything a request may get, and says which it was: a 200 that
 * is a whole document, or a refusal in the OData error format (429 and 503 with Retry-After), within
 * `bound` ms either way.
 */
function checked(res: LightMyRequestResponse, r: Request, ms: number, bound: number): string {
  const where = `${r.client} GET ${decodeURIComponent(urlOf(r))} -> ${res.statusCode} in ${ms.toFixed(0)} ms`;
  expect(ms, where).toBeLessThan(bound);
  if (res.statusCode === 200) {
    expectComplete(res, r, where);
    return '200';
  }
  expect([400, 429, 503], `${where}\n${res.body.slice(0, 400)}`).toContain(res.statusCode);
  const message = expectODataError(res, r.json, where);
  if (res.statusCode === 429 || res.statusCode === 503) {
    const retryAfter = Number(res.headers['retry-after']);
    expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `${where}: Retry-After ${String(res.headers['retry-after'])}`).toBe(true);
  }
  if (res.statusCode === 429) return /OData database time/.test(message) ? '429 budget' : /running/.test(message) ? '429 running' : '429 other';
  return res.statusCode === 400 && /database time \(the limit\)/.test(message) ? '400 time' : String(res.statusCode);
}

/** send sends a request and checks its answer (checked), with `bound` ms to answer; returns what it was. */
async function send(t: TestContext, r: Request, bound = boundOf(r)): Promise<string> {
  const url = urlOf(r);
  const started = performance.now();
  const res = await within(t, url, r.client, bound);
  return checked(res, r, performance.now() - started, bound);
}

/** A legal filter near the node limit that builds 32 copies of every text per row: the most one row may cost. */
const HEAVY = `indexof(${wide(5, 'tolower(nonsense)')},'zq') eq 7`;

describe('OData request cost', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({
      entries: entries(),
      variables: VARIABLES,
      // A small budget and a few addresses, so that some requests find theirs spent; the number of
      // requests an address may run at once as in production.
      env: { ODATA_TIME_BUDGET: '2s/1m', HEAVY_REQUESTS_PER_CLIENT: '4' },
    });
    expect(Number((await t.app.inject('/odata/v2/nonsense_list/$count')).body)).toBe(COUNT);
    // The read workers start with their first task (from the TypeScript sources, most of a second):
    // start-up, not a request's cost. One read per thread, at once, starts both.
    const warm = await Promise.all(['10.9.9.1', '10.9.9.2'].map((remoteAddress) => t.app.inject({ url: "/odata/v2/nonsense_list?$filter=substringof('x',nonsense)", remoteAddress })));
    for (const res of warm) expect(res.statusCode).toBe(200);
  });
  afterAll(() => t.close());

  it('answers every request within its limits, or refuses it in the OData error format', { timeout: 120_000 }, async () => {
    const seen = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const what = await send(t, r);
        seen.set(what, (seen.get(what) ?? 0) + 1);
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    // Both main paths were taken: answers, and refusals by the size limits. Whether the greedy
    // address spent its budget here depends on the host's speed; the next test makes sure.
    expect(seen.get('200') ?? 0, JSON.stringify([...seen])).toBeGreaterThanOrEqual(RUNS / 5);
    expect(seen.get('400') ?? 0, JSON.stringify([...seen])).toBeGreaterThan(0);
  });

  it('tells an address that has spent its database time when to come back, and serves the others', { timeout: 120_000 }, async () => {
    const spender = '192.0.2.77';
    const refused = new Set<boolean>();
    // Heavy feeds until the address has been refused in both formats; the budget is a few of them.
    for (let i = 0; i < 60 && refused.size < 2; i++) {
      const json = i % 2 === 0;
      const what = await send(t, { filter: HEAVY, inlineCount: true, all: true, json, client: spender });
      expect(['200', '400 time', '429 budget']).toContain(what);
      if (what === '429 budget') refused.add(json);
    }
    expect(refused.size, 'refused in JSON and in XML').toBe(2);
    expect(await send(t, { filter: HEAVY, json: true, client: '192.0.2.78' })).toBe('200');
  });

  it('refuses a fifth heavy request of one address while four run, in the OData error format', async () => {
    const client = '192.0.2.99';
    const requests: Request[] = Array.from({ length: 5 }, (_, i) => ({ filter: HEAVY, orderBy: 'nonsense', json: i % 2 === 0, client }));
    // The four that run share one address's turn at the read threads, one after another.
    const answers = await Promise.all(requests.map((r) => send(t, r, boundOf(r) * requests.length)));
    expect(answers.filter((what) => what === '429 running'), answers.join(', ')).toHaveLength(1);
    expect(answers.filter((what) => what === '200' || what === '400 time'), answers.join(', ')).toHaveLength(4);
  });
});
