/**
 * The `$filter`/`$orderby` compiler on the engine of the run: compiled size (SQL text and bound
 * parameters) grows at most linearly with the expression, for adversarial families and for random
 * expressions (fast-check); and the random expressions mean on the database exactly what a direct
 * evaluation of OData's rules over the same entries gives.
 */
import fc from 'fast-check';
import { sql, type Expression, type SqlBool } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileFilter, compileOrderBy, type CompileContext } from '../../src/storage/odata-filter.ts';
import { ODataRequestError } from '../../src/domain/odata/errors.ts';
import { parseFilter, parseOrderBy } from '../../src/domain/odata/expression.ts';
import { MAX_NODES } from '../../src/domain/odata/limits.ts';
import { CLIENT_VARIABLES } from '../../src/domain/variables.ts';
import { createTestApp, entry, type TestContext } from '../helper.ts';

// ASCII only, no string ordering: both engines agree with JavaScript on everything the oracle checks.
const TEXTS = [
  'The Cat sat.',
  'cat',
  'Feed the $ANIMAL$ now',
  "It's $AUTHOR$ o'clock",
  'line one\nline two',
  'carriage\rreturn',
  'a  b',
  'zz',
  'Cat and cat and CAT',
  '$UNKNOWN$ here',
  'x',
  'Ends with cat',
];
const T0 = 1_700_000_000;
const entries = TEXTS.map((text, i) => entry(text, T0 + i * 10, `dddddddd-0000-4000-8000-${String(i).padStart(12, '0')}`));
const TOKENS = ['$ANIMAL$', ...CLIENT_VARIABLES.map((v) => v.name)];

interface Row {
  uuid: string;
  text: string;
  timestamp: number;
}

/** A generated expression: its OData text and what it means for one entry (null for an OData null). */
interface Gen<T> {
  text: string;
  nodes: number;
  eval: (row: Row) => T;
}
type S = Gen<string | null>;
type I = Gen<number | null>;
type B = Gen<boolean>;

const quote = (value: string) => `'${value.replace(/'/g, "''")}'`;
const originalOf = (text: string) => (TOKENS.some((token) => text.includes(token)) ? text : null);
const lift1 = <A, R>(a: A | null, f: (a: A) => R): R | null => (a === null ? null : f(a));
const lift2 = <A, C, R>(a: A | null, b: C | null, f: (a: A, b: C) => R): R | null => (a === null || b === null ? null : f(a, b));

const stringLeaf: fc.Arbitrary<S> = fc.oneof(
  fc.constant<S>({ text: 'nonsense', nodes: 1, eval: (r) => r.text }),
  fc.constant<S>({ text: 'original_nonsense', nodes: 1, eval: (r) => originalOf(r.text) }),
  fc.constantFrom('cat', 'Cat', '', "o'clock", '$AUTHOR$', ' a ', 'line', 'zz', 'T').map<S>((v) => ({ text: quote(v), nodes: 1, eval: () => v })),
);
const smallInt = fc.oneof(fc.integer({ min: 0, max: 14 }), fc.constant(3_000_000_000));
const intLiteral = fc
  .oneof(fc.integer({ min: -3, max: 25 }), fc.constant(2_147_483_648), fc.constant(9_007_199_254_740_991), fc.constant(-9_007_199_254_740_991))
  .map<I>((v) => ({ text: String(v), nodes: 1, eval: () => v }));

const { bool } = fc.letrec<{ bool: B; str: S; int: I }>((tie) => {
  const str = tie('str');
  const int = tie('int');
  const bool = tie('bool');
  const call1 = (name: string, f: (s: string) => string) =>
    str.map<S>((a) => ({ text: `${name}(${a.text})`, nodes: a.nodes + 1, eval: (r) => lift1(a.eval(r), f) }));
  const compareInts = fc.tuple(int, fc.constantFrom('eq', 'ne', 'gt', 'ge', 'lt', 'le'), int).map<B>(([a, op, b]) => ({
    text: `(${a.text} ${op} ${b.text})`,
    nodes: a.nodes + b.nodes + 1,
    eval: (r) => {
      const [x, y] = [a.eval(r), b.eval(r)];
      if (op === 'eq') return x === y;
      if (op === 'ne') return x !== y;
      if (x === null || y === null) return false;
      return op === 'gt' ? x > y : op === 'ge' ? x >= y : op === 'lt' ? x < y : x <= y;
    },
  }));
  const stringTest = (name: string, f: (a: string, b: string) => boolean) =>
    fc.tuple(str, str).map<B>(([a, b]) => ({ text: `${name}(${a.text},${b.text})`, nodes: a.nodes + b.nodes + 1, eval: (r) => lift2(a.eval(r), b.eval(r), f) ?? false }));
  return {
    str: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      stringLeaf,
      call1('tolower', (s) => s.toLowerCase()),
      call1('toupper', (s) => s.toUpperCase()),
      call1('trim', (s) => s.replace(/^ +| +$/g, '')),
      fc.tuple(str, str).map<S>(([a, b]) => ({ text: `concat(${a.text},${b.text})`, nodes: a.nodes + b.nodes + 1, eval: (r) => lift2(a.eval(r), b.eval(r), (x, y) => x + y) })),
      fc.tuple(str, smallInt, fc.option(smallInt, { nil: undefined })).map<S>(([a, start, length]) => ({
        text: `substring(${a.text},${start}${length === undefined ? '' : `,${length}`})`,
        nodes: a.nodes + 2 + (length === undefined ? 0 : 1),
        eval: (r) => lift1(a.eval(r), (s) => (length === undefined ? s.slice(start) : s.slice(start, start + length))),
      })),
    ),
    int: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.constant<I>({ text: 'timestamp', nodes: 1, eval: (r) => r.timestamp }),
      intLiteral,
      str.map<I>((a) => ({ text: `length(${a.text})`, nodes: a.nodes + 1, eval: (r) => lift1(a.eval(r), (s) => s.length) })),
      fc.tuple(str, str).map<I>(([a, b]) => ({ text: `indexof(${a.text},${b.text})`, nodes: a.nodes + b.nodes + 1, eval: (r) => lift2(a.eval(r), b.eval(r), (x, y) => x.indexOf(y)) })),
    ),
    bool: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.constant<B>({ text: 'multiline', nodes: 1, eval: (r) => /[\n\r]/.test(r.text) }),
      fc.constantFrom(true, false).map<B>((v) => ({ text: String(v), nodes: 1, eval: () => v })),
      bool.map<B>((a) => ({ text: `(not ${a.text})`, nodes: a.nodes + 1, eval: (r) => !a.eval(r) })),
      fc.tuple(bool, fc.constantFrom('and', 'or', 'eq', 'ne'), bool).map<B>(([a, op, b]) => ({
        text: `(${a.text} ${op} ${b.text})`,
        nodes: a.nodes + b.nodes + 1,
        eval: (r) => {
          const [x, y] = [a.eval(r), b.eval(r)];
          return op === 'and' ? x && y : op === 'or' ? x || y : op === 'eq' ? x === y : x !== y;
        },
      })),
      fc.tuple(str, fc.constantFrom('eq', 'ne'), fc.oneof(str, fc.constant<S>({ text: 'null', nodes: 1, eval: () => null }))).map<B>(([a, op, b]) => ({
        text: `(${a.text} ${op} ${b.text})`,
        nodes: a.nodes + b.nodes + 1,
        eval: (r) => (a.eval(r) === b.eval(r)) === (op === 'eq'),
      })),
      compareInts,
      stringTest('substringof', (needle, haystack) => haystack.includes(needle)),
      stringTest('startswith', (text, prefix) => text.startsWith(prefix)),
      stringTest('endswith', (text, suffix) => text.endsWith(suffix)),
    ),
  };
});

describe('OData compiled size and meaning', () => {
  let t: TestContext;
  let context: CompileContext;
  beforeAll(async () => {
    t = await createTestApp({ entries, variables: [{ name: '$ANIMAL$', description: 'An animal.', values: ['newt'] }] });
    context = { quirks: t.database.quirks, variableTokens: TOKENS };
  });
  afterAll(() => t.close());

  /** size compiles an expression for this engine: the SQL text length and the number of bound parameters. */
  function size(expression: Expression<unknown>): { sql: number; parameters: number } {
    const compiled = sql`${expression}`.compile(t.database.db);
    // PostgreSQL numbers its placeholders ($1, $10, $100): count each as one character, as SQLite's ?.
    return { sql: compiled.sql.replace(/\$\d+/g, '?').length, parameters: compiled.parameters.length };
  }
  const filterSize = (text: string) => size(compileFilter(parseFilter(text), context));

  it.each([
    ['a chain of boolean comparisons', (n: number) => Array.from({ length: n + 1 }, () => 'multiline').join(' eq ')],
    ['a chain of comparisons of null-aware conditions', (n: number) => Array.from({ length: n + 1 }, (_, i) => `(original_nonsense ${i % 2 ? 'ne' : 'eq'} 'x')`).join(' ne ')],
    ['nested not and comparisons', (n: number) => `${'not '.repeat(n)}(length(original_nonsense) gt 3)`],
    ['a chain of or', (n: number) => Array.from({ length: n + 1 }, (_, i) => `endswith(original_nonsense, '${i}')`).join(' or ')],
    ['comparisons of startswith and endswith', (n: number) => Array.from({ length: n + 1 }, (_, i) => (i % 2 ? `startswith(tolower(original_nonsense), 'a')` : `endswith(concat(nonsense, original_nonsense), 'b')`)).join(' eq ')],
  ])('%s grows by the same amount with every operator', (_name, family) => {
    const sizes = Array.from({ length: 16 }, (_, n) => filterSize(family(n + 1)));
    const texts = Array.from({ length: 16 }, (_, n) => family(n + 1).length);
    // Linear: constant steps once the pattern repeats (families alternate with period 2).
    for (let n = 4; n < sizes.length; n++) {
      expect(sizes[n]!.sql - sizes[n - 2]!.sql).toBe(sizes[n - 2]!.sql - sizes[n - 4]!.sql);
      expect(sizes[n]!.parameters - sizes[n - 2]!.parameters).toBe(sizes[n - 2]!.parameters - sizes[n - 4]!.parameters);
      expect(sizes[n]!.sql).toBeLessThanOrEqual(40 * texts[n]!);
    }
  });

  it('compiles 20 boolean comparisons in a row to a small query (it once doubled with each)', async () => {
    const text = Array.from({ length: 21 }, () => 'multiline').join(' eq ');
    const { sql: length, parameters } = filterSize(text);
    expect(length).toBeLessThan(2000);
    expect(parameters).toBe(42);
    // For a multi-line entry every step stays true; for a single-line one the value alternates and,
    // after 21 operands, ends false.
    const res = await t.app.inject(`/odata/v2/nonsense_list?$format=json&all=true&$filter=${encodeURIComponent(text)}`);
    expect(res.statusCode, res.body).toBe(200);
    const got = (res.json().d.results as { nonsense: string }[]).map((e) => e.nonsense).sort();
    expect(got).toEqual(['carriage\rreturn', 'line one\nline two']);
  });

  it('keeps $orderby linear too, nullable keys included', () => {
    const order = (n: number) => Array.from({ length: n }, (_, i) => (i % 2 ? `concat(original_nonsense, '${i}') desc` : `length(original_nonsense) eq ${i}`)).join(',');
    const sizes = [2, 4, 6, 8].map((n) => compileOrderBy(parseOrderBy(order(n)), context).reduce((sum, key) => sum + ('expression' in key ? size(key.expression).sql : 0), 0));
    expect(sizes[3]! - sizes[2]!).toBe(sizes[2]! - sizes[1]!);
    expect(sizes[2]! - sizes[1]!).toBe(sizes[1]! - sizes[0]!);
  });

  it('random expressions: compiled size at most linear in the text, and the same answers as OData rules evaluated directly', async () => {
    const rows: Row[] = entries.map((e) => ({ uuid: e.uuid, text: e.text, timestamp: e.timestamp }));
    await fc.assert(
      fc.asyncProperty(bool, async (expression) => {
        fc.pre(expression.nodes <= MAX_NODES);
        let where: Expression<SqlBool>;
        try {
          where = compileFilter(parseFilter(expression.text), context);
        } catch (error) {
          // Within the node limit, only the parameter limit may refuse an expression; never silently.
          expect(error).toBeInstanceOf(ODataRequestError);
          expect((error as Error).message).toMatch(/bound parameters \(the limit\)/);
          return;
        }
        const compiled = size(where);
        expect(compiled.sql).toBeLessThanOrEqual(40 * expression.text.length + 40);
        expect(compiled.parameters).toBeLessThanOrEqual(expression.text.length);
        const got = (await t.storage.entryQuery.list({ where })).map((e) => e.uuid).sort();
        const expected = rows.filter((row) => expression.eval(row)).map((row) => row.uuid).sort();
        expect(got, expression.text).toEqual(expected);
      }),
      { numRuns: 150, seed: 20240613 },
    );
  });
});
