/**
 * $filter and $orderby semantics, end to end through HTTP and the database: every operator and
 * function against a small set of entries whose answers are known.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, entry, setState, type TestContext } from '../helper.ts';

const T0 = Date.UTC(2024, 0, 1) / 1000; // 2024-01-01T00:00:00Z
const E = (n: number, text: string, offset: number) => entry(text, T0 + offset, `aaaaaaaa-0000-4000-8000-${String(n).padStart(12, '0')}`);
const entries = [
  E(1, 'The Cat sat.', 0),
  E(2, 'A CAFÉ for geese', 10),
  E(3, 'Line one\nline two about a cat', 20),
  E(4, 'Feed the $ANIMAL$, said $AUTHOR$', 30),
  E(5, "It's ${app_name} o'clock", 40),
  E(6, 'Carriage\rreturn', 50),
  E(7, 'Hidden cat', 60),
  E(8, 'Costs $UNKNOWN$ dollars', 70),
  E(9, 'zz', 80),
];

describe('OData $filter and $orderby', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({
      env: { RATE_LIMIT_READ: 'off', OVERLOAD_MAX_EVENT_LOOP_DELAY: 'off' },
      variables: [{ name: '$ANIMAL$', description: 'An animal.', values: ['newt'] }],
      entries,
    });
    await setState(t.storage, entries[6]!.uuid, 'hidden');
  });
  afterAll(() => t.close());

  /** ids returns the last two digits of the uuids the feed answers, in order. */
  async function ids(options: string): Promise<string[]> {
    const res = await t.app.inject(`/odata/v2/nonsense_list?$format=json&${options.split('&').map((p) => p.replace(/ /g, '%20').replace(/#/g, '%23')).join('&')}`);
    expect(res.statusCode, res.body).toBe(200);
    return (res.json().d.results as { uuid: string }[]).map((e) => e.uuid.slice(-2));
  }
  const where = (filter: string) => ids(`$filter=${encodeURIComponent(filter)}`);

  async function error(options: string): Promise<string> {
    const res = await t.app.inject(`/odata/v2/nonsense_list?$format=json&${options}`);
    expect(res.statusCode, res.body).toBe(400);
    return res.json().error.message.value;
  }

  it('compares timestamps with every operator, Int32 and Int64 literals alike', async () => {
    expect(await where(`timestamp eq ${T0 + 10}`)).toEqual(['02']);
    expect(await where(`timestamp ne ${T0 + 10}`)).toEqual(['01', '03', '04', '05', '06', '08', '09']);
    expect(await where(`timestamp gt ${T0 + 50}L`)).toEqual(['08', '09']);
    expect(await where(`timestamp ge ${T0 + 50}L`)).toEqual(['06', '08', '09']);
    expect(await where(`timestamp lt ${T0 + 10}`)).toEqual(['01']);
    expect(await where(`timestamp le ${T0 + 10}`)).toEqual(['01', '02']);
    expect(await where(`${T0 + 10} ge timestamp`)).toEqual(['01', '02']);
  });

  it('compares created with datetime literals as UTC instants, fractions of seconds included', async () => {
    expect(await where("created eq datetime'2024-01-01T00:00:10'")).toEqual(['02']);
    expect(await where("created lt datetime'2024-01-01T00:00:10'")).toEqual(['01']);
    expect(await where("created le datetime'2024-01-01T00:00:10Z'")).toEqual(['01', '02']);
    expect(await where("created gt datetimeoffset'2024-01-01T01:01:00+01:00'")).toEqual(['08', '09']);
    expect(await where("created gt datetime'2024-01-01T00:00:09.5'")).toEqual(['02', '03', '04', '05', '06', '08', '09']);
    expect(await where("created ge datetime'2024-01-01T00:00:09.5'")).toEqual(['02', '03', '04', '05', '06', '08', '09']);
    expect(await where("created lt datetime'2024-01-01T00:00:10.5'")).toEqual(['01', '02']);
    expect(await where("created le datetime'2024-01-01T00:00:09.5'")).toEqual(['01']);
    expect(await where("created eq datetime'2024-01-01T00:00:10.5'")).toEqual([]);
    expect(await where("created ne datetime'2024-01-01T00:00:10.5'")).toHaveLength(8);
    expect(await where("datetime'2024-01-01T00:00:10' gt created")).toEqual(['01']);
  });

  it('compares guids whatever their case', async () => {
    expect(await where("uuid eq guid'AAAAAAAA-0000-4000-8000-000000000003'")).toEqual(['03']);
    expect(await where("uuid ne guid'aaaaaaaa-0000-4000-8000-000000000003' and timestamp lt " + (T0 + 30))).toEqual(['01', '02']);
  });

  it('filters nonsense on the raw text, case-sensitively, with quotes escaped by doubling', async () => {
    expect(await where("nonsense eq 'The Cat sat.'")).toEqual(['01']);
    expect(await where("nonsense eq 'the cat sat.'")).toEqual([]);
    expect(await where("nonsense eq 'Feed the $ANIMAL$, said $AUTHOR$'")).toEqual(['04']);
    expect(await where("nonsense eq 'Feed the newt, said $AUTHOR$'")).toEqual([]);
    expect(await where("nonsense eq 'It''s ${app_name} o''clock'")).toEqual(['05']);
    expect(await where("nonsense gt 'Line' and nonsense lt 'M'")).toEqual(['03']);
  });

  it('gives original_nonsense exactly for texts with a known variable, with OData null logic', async () => {
    expect(await where('original_nonsense ne null')).toEqual(['04', '05']);
    expect(await where('original_nonsense eq null')).toEqual(['01', '02', '03', '06', '08', '09']);
    expect(await where('null eq original_nonsense')).toEqual(['01', '02', '03', '06', '08', '09']);
    expect(await where("original_nonsense eq 'Feed the $ANIMAL$, said $AUTHOR$'")).toEqual(['04']);
    // null ne 'x' is true, and not(null eq 'x') is true: two-valued logic, no entry lost to SQL NULL.
    expect(await where("original_nonsense ne 'Feed the $ANIMAL$, said $AUTHOR$'")).toEqual(['01', '02', '03', '05', '06', '08', '09']);
    expect(await where("not (original_nonsense eq 'Feed the $ANIMAL$, said $AUTHOR$')")).toEqual(['01', '02', '03', '05', '06', '08', '09']);
    expect(await where("original_nonsense gt 'A'")).toEqual(['04', '05']);
    expect(await where("not (original_nonsense gt 'A')")).toEqual(['01', '02', '03', '06', '08', '09']);
    expect(await where("substringof('o''clock', original_nonsense)")).toEqual(['05']);
    expect(await where("not substringof('o''clock', original_nonsense)")).toEqual(['01', '02', '03', '04', '06', '08', '09']);
    expect(await where('length(original_nonsense) gt 0')).toEqual(['04', '05']);
    expect(await where('original_nonsense eq original_nonsense')).toHaveLength(8);
    expect(await where('nonsense eq null')).toEqual([]);
    expect(await where('nonsense ne null')).toHaveLength(8);
  });

  it('tells multi-line entries by \\n or \\r, as a boolean property', async () => {
    expect(await where('multiline')).toEqual(['03', '06']);
    expect(await where('multiline eq true')).toEqual(['03', '06']);
    expect(await where('true eq multiline')).toEqual(['03', '06']);
    expect(await where('multiline ne true')).toEqual(['01', '02', '04', '05', '08', '09']);
    expect(await where('not multiline')).toEqual(['01', '02', '04', '05', '08', '09']);
    expect(await where('multiline eq false')).toEqual(['01', '02', '04', '05', '08', '09']);
    expect(await where("multiline eq substringof('cat', nonsense)")).toEqual(['01', '02', '03', '04', '05', '08', '09']);
    expect(await where('true')).toHaveLength(8);
    expect(await where('false')).toEqual([]);
  });

  it('combines with and, or, not and parentheses', async () => {
    expect(await where(`timestamp lt ${T0 + 20} or timestamp gt ${T0 + 70} and multiline eq false`)).toEqual(['01', '02', '09']);
    expect(await where(`(timestamp lt ${T0 + 20} or timestamp gt ${T0 + 70}) and nonsense ne 'zz'`)).toEqual(['01', '02']);
    expect(await where(`not (timestamp lt ${T0 + 20} or multiline)`)).toEqual(['04', '05', '08', '09']);
  });

  it('runs the string functions', async () => {
    expect(await where("substringof('cat', nonsense)")).toEqual(['03']);
    expect(await where("substringof('cat', tolower(nonsense))")).toEqual(['01', '03']);
    expect(await where("substringof('CAT', toupper(nonsense))")).toEqual(['01', '03']);
    expect(await where("startswith(nonsense, 'Line')")).toEqual(['03']);
    expect(await where("startswith(nonsense, '')")).toHaveLength(8);
    expect(await where("endswith(nonsense, 'geese')")).toEqual(['02']);
    expect(await where("endswith(nonsense, 'a much longer suffix than zz')")).toEqual([]);
    expect(await where("endswith(nonsense, '')")).toHaveLength(8);
    expect(await where('length(nonsense) eq 2')).toEqual(['09']);
    expect(await where('length(nonsense) eq 16')).toEqual(['02']);
    expect(await where("tolower(nonsense) eq 'the cat sat.'")).toEqual(['01']);
    expect(await where("indexof(nonsense, 'Cat') eq 4")).toEqual(['01']);
    expect(await where("substring(nonsense, 4, 3) eq 'Cat'")).toEqual(['01']);
    expect(await where("substring(nonsense, 7) eq 'for geese'")).toEqual(['02']);
    expect(await where("concat(nonsense, '!') eq 'zz!'")).toEqual(['09']);
    expect(await where("trim(concat(' ', nonsense)) eq 'zz'")).toEqual(['09']);
  });

  it('takes literals as data: quotes, wildcards and SQL in strings match only themselves', async () => {
    expect(await where("substringof('%', nonsense)")).toEqual([]);
    expect(await where("substringof('_', nonsense)")).toEqual(['05']);
    expect(await where("nonsense eq '''; DROP TABLE entries; --'")).toEqual([]);
    expect(await where("substringof('$UNKNOWN$', nonsense)")).toEqual(['08']);
    expect(await ids('$top=100')).toHaveLength(8);
  });

  it('orders by any property or expression, either way, several keys, uuid breaking ties', async () => {
    expect(await ids('$orderby=timestamp desc')).toEqual(['09', '08', '06', '05', '04', '03', '02', '01']);
    expect(await ids('$orderby=created')).toEqual(['01', '02', '03', '04', '05', '06', '08', '09']);
    expect(await ids('$orderby=nonsense')).toEqual(['02', '06', '08', '04', '05', '03', '01', '09']);
    expect(await ids('$orderby=tolower(nonsense) desc')).toEqual(['09', '01', '03', '05', '04', '08', '06', '02']);
    expect(await ids('$orderby=multiline desc,timestamp desc')).toEqual(['06', '03', '09', '08', '05', '04', '02', '01']);
    // Nulls first ascending, last descending, on every engine.
    expect(await ids('$orderby=original_nonsense,timestamp desc')).toEqual(['09', '08', '06', '03', '02', '01', '04', '05']);
    expect(await ids('$orderby=original_nonsense desc,timestamp')).toEqual(['05', '04', '01', '02', '03', '06', '08', '09']);
    expect(await ids('$orderby=length(nonsense),uuid desc')).toEqual(['09', '01', '06', '02', '08', '05', '03', '04']);
    expect(await ids('$orderby=uuid desc&$top=2')).toEqual(['09', '08']);
  });

  it('answers 400 with a message for what it cannot do', async () => {
    expect(await error('$filter=foo%20eq%201')).toMatch(/Unknown property 'foo' \(at character 1\); the properties are uuid, nonsense/);
    expect(await error('$filter=Nonsense%20eq%20%27x%27')).toMatch(/Unknown property 'Nonsense'/);
    expect(await error("$filter=timestamp%20eq%20'x'")).toMatch(/Cannot compare Edm.Int64 with Edm.String \(at character 11\)/);
    expect(await error("$filter=created%20eq%201700000000")).toMatch(/Cannot compare Edm.DateTime with Edm.Int32/);
    expect(await error("$filter=uuid%20eq%20'aaaaaaaa-0000-4000-8000-000000000003'")).toMatch(/Cannot compare Edm.Guid with Edm.String/);
    expect(await error('$filter=nonsense')).toMatch(/needs a condition \(Edm.Boolean\), but got Edm.String/);
    expect(await error('$filter=not%20timestamp')).toMatch(/not \(at character 1\) needs a condition/);
    expect(await error('$filter=multiline%20and%20timestamp')).toMatch(/and \(at character 11\) needs a condition/);
    expect(await error('$filter=multiline%20gt%20false')).toMatch(/only be compared with eq or ne/);
    expect(await error('$filter=original_nonsense%20gt%20null')).toMatch(/null can only be compared with eq or ne/);
    expect(await error('$filter=year(created)%20eq%202024')).toMatch(/function 'year' is not supported \(at character 1\); the supported functions are substringof/);
    expect(await error('$filter=length(nonsense,%201)%20eq%201')).toMatch(/length takes 1 argument, got 2/);
    expect(await error('$filter=length(timestamp)%20eq%201')).toMatch(/length expects Edm.String here, but got Edm.Int64/);
    expect(await error("$filter=substringof(1,%20nonsense)")).toMatch(/substringof expects Edm.String/);
    expect(await error('$filter=substring(nonsense,%20-1)%20eq%20%27x%27')).toMatch(/must not be negative/);
    expect(await error('$filter=timestamp%20eq%201%20and')).toMatch(/Syntax error in \$filter at character 19/);
    expect(await error('$orderby=%27x%27')).toMatch(/not a literal/);
    expect(await error('$orderby=bogus')).toMatch(/Unknown property 'bogus'/);
  });
});
