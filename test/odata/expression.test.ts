import { describe, expect, it } from 'vitest';
import { ODataRequestError } from '../../src/domain/odata/errors.ts';
import { parseDateTime, parseFilter, parseOrderBy, type ExpressionNode } from '../../src/domain/odata/expression.ts';

/** show prints an AST compactly, with explicit parentheses, so precedence is visible. */
function show(node: ExpressionNode): string {
  switch (node.kind) {
    case 'literal':
      return node.type === 'Edm.String' ? `'${node.value}'` : `${node.type}:${String(node.value)}`;
    case 'property':
      return node.name;
    case 'not':
      return `(not ${show(node.operand)})`;
    case 'compare':
    case 'logical':
      return `(${show(node.left)} ${node.operator} ${show(node.right)})`;
    case 'call':
      return `${node.name}(${node.args.map(show).join(', ')})`;
  }
}

const filter = (text: string) => show(parseFilter(text));

function errorOf(fn: () => unknown): ODataRequestError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ODataRequestError);
    return error as ODataRequestError;
  }
  throw new Error('expected an error');
}

describe('$filter parser: precedence and associativity', () => {
  it.each([
    ['a eq 1 or b eq 2 and c eq 3', '((a eq Edm.Int32:1) or ((b eq Edm.Int32:2) and (c eq Edm.Int32:3)))'],
    ['a eq 1 and b eq 2 or c eq 3', '(((a eq Edm.Int32:1) and (b eq Edm.Int32:2)) or (c eq Edm.Int32:3))'],
    ['(a eq 1 or b eq 2) and c eq 3', '(((a eq Edm.Int32:1) or (b eq Edm.Int32:2)) and (c eq Edm.Int32:3))'],
    ['a or b or c', '((a or b) or c)'],
    ['a and b and c', '((a and b) and c)'],
    ['not a and b', '((not a) and b)'],
    ['not (a and b)', '(not (a and b))'],
    ['not not a', '(not (not a))'],
    ['not a eq true', '((not a) eq Edm.Boolean:true)'],
    // Relational binds tighter than equality.
    ['a lt 1 eq true', '((a lt Edm.Int32:1) eq Edm.Boolean:true)'],
    ['a eq b eq c', '((a eq b) eq c)'],
    ['((((a))))', 'a'],
  ])('%s', (text, expected) => {
    expect(filter(text)).toBe(expected);
  });

  it('reads every comparison operator, in any case, and ignores extra whitespace', () => {
    for (const op of ['eq', 'ne', 'gt', 'ge', 'lt', 'le']) {
      expect(filter(`timestamp ${op} 5`)).toBe(`(timestamp ${op} Edm.Int32:5)`);
      expect(filter(`  timestamp   ${op.toUpperCase()}\t5 `)).toBe(`(timestamp ${op} Edm.Int32:5)`);
    }
    expect(filter('a AND b Or NOT c')).toBe('((a and b) or (not c))');
  });
});

describe('$filter parser: functions', () => {
  it.each([
    ["substringof('cat', nonsense)", "substringof('cat', nonsense)"],
    ["startswith(nonsense,'A')", "startswith(nonsense, 'A')"],
    ["endswith(nonsense, '.')", "endswith(nonsense, '.')"],
    ["tolower(nonsense) eq 'x'", "(tolower(nonsense) eq 'x')"],
    ["toupper(nonsense) eq 'X'", "(toupper(nonsense) eq 'X')"],
    ['length(nonsense) gt 10', '(length(nonsense) gt Edm.Int32:10)'],
    ["substringof('a', tolower(toupper(nonsense)))", "substringof('a', tolower(toupper(nonsense)))"],
    ["SubStringOf('a', nonsense)", "substringof('a', nonsense)"],
    ['f()', 'f()'],
    ["substring(nonsense, 1, 2) eq 'ab'", "(substring(nonsense, Edm.Int32:1, Edm.Int32:2) eq 'ab')"],
  ])('%s', (text, expected) => {
    expect(filter(text)).toBe(expected);
  });
});

describe('$filter parser: literals', () => {
  const literal = (text: string) => parseFilter(`x eq ${text}`) as Extract<ExpressionNode, { kind: 'compare' }>;
  const right = (text: string) => literal(text).right;

  it('reads strings with doubled quotes, empty strings and unicode', () => {
    expect(right("'it''s'")).toMatchObject({ type: 'Edm.String', value: "it's" });
    expect(right("''")).toMatchObject({ type: 'Edm.String', value: '' });
    expect(right("''''")).toMatchObject({ type: 'Edm.String', value: "'" });
    expect(right("'Straße 🦆 eq and'")).toMatchObject({ type: 'Edm.String', value: 'Straße 🦆 eq and' });
  });

  it('reads integers as Int32, with L or beyond Int32 as Int64, negative ones too', () => {
    expect(right('42')).toMatchObject({ type: 'Edm.Int32', value: 42 });
    expect(right('-7')).toMatchObject({ type: 'Edm.Int32', value: -7 });
    expect(right('42L')).toMatchObject({ type: 'Edm.Int64', value: 42 });
    expect(right('1700000000123')).toMatchObject({ type: 'Edm.Int64', value: 1700000000123 });
  });

  it('reads booleans and null', () => {
    expect(right('true')).toMatchObject({ type: 'Edm.Boolean', value: true });
    expect(right('FALSE')).toMatchObject({ type: 'Edm.Boolean', value: false });
    expect(right('null')).toMatchObject({ type: 'null', value: null });
  });

  it('reads guids in any case, as lower case', () => {
    expect(right("guid'6F1C2A0E-8A4B-4C1E-9F57-2F3B9D0C1A11'")).toMatchObject({ type: 'Edm.Guid', value: '6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11' });
  });

  it('reads datetime (UTC) and datetimeoffset literals as epoch milliseconds', () => {
    expect(right("datetime'2024-01-01T00:00:00'")).toMatchObject({ type: 'Edm.DateTime', value: Date.UTC(2024, 0, 1) });
    expect(right("datetime'2024-01-01T00:00'")).toMatchObject({ value: Date.UTC(2024, 0, 1) });
    expect(right("datetime'2024-01-01T00:00:01.5'")).toMatchObject({ value: Date.UTC(2024, 0, 1) + 1500 });
    expect(right("datetime'2024-01-01T00:00:00Z'")).toMatchObject({ value: Date.UTC(2024, 0, 1) });
    expect(right("datetimeoffset'2024-01-01T02:00:00+02:00'")).toMatchObject({ value: Date.UTC(2024, 0, 1) });
    expect(right("datetimeoffset'2023-12-31T23:30:00-00:30'")).toMatchObject({ value: Date.UTC(2024, 0, 1) });
  });

  it('checks dates for real calendar days and times', () => {
    expect(parseDateTime('2024-02-29T00:00:00', false)).toBe(Date.UTC(2024, 1, 29));
    // Years below 100 are those years, not 1900 and after.
    expect(parseDateTime('0050-01-01T00:00:00', false)).toBe(-60589296000000);
    expect(new Date(parseDateTime('0001-01-01T00:00:00', false)!).toISOString()).toBe('0001-01-01T00:00:00.000Z');
    expect(parseDateTime('2023-02-29T00:00:00', false)).toBeNull();
    expect(parseDateTime('2024-13-01T00:00:00', false)).toBeNull();
    expect(parseDateTime('2024-01-01T24:00:00', false)).toBeNull();
    expect(parseDateTime('2024-01-01', false)).toBeNull();
    expect(parseDateTime('2024-01-01T00:00:00+01:00', false)).toBeNull();
    expect(parseDateTime('2024-01-01T00:00:00', true)).toBeNull();
    expect(parseDateTime('2024-01-01T12%3A00%3A00', false)).toBe(Date.UTC(2024, 0, 1, 12));
  });
});

describe('$filter parser: errors name the place', () => {
  it.each([
    ['', 1, /empty/],
    ["nonsense eq 'open", 13, /not closed/],
    ['timestamp eq', 13, /expected a value/],
    ['(timestamp eq 1', 16, /expected '\)'/],
    ['timestamp eq 1)', 15, /unexpected '\)'/],
    ['timestamp eq 1 timestamp', 16, /unexpected 'timestamp'/],
    ['timestamp add 1 eq 2', 11, /arithmetic operator "add" is not supported/],
    ['timestamp eq 1.5', 14, /only integer literals/],
    ['timestamp eq 1.5M', 14, /only integer literals/],
    ['timestamp eq 99999999999999999999', 14, /out of range/],
    ["uuid eq guid'nope'", 9, /is not a GUID/],
    ["created gt datetime'2024-99-01T00:00:00'", 12, /not a valid date/],
    ["x eq binary'AB'", 6, /not supported/],
    ["x eq time'PT1H'", 6, /not supported/],
    ['timestamp eq -x', 14, /negation operator/],
    ['nonsense/foo eq 1', 9, /member access/],
    ['eq eq 1', 1, /found the operator 'eq'/],
    ['timestamp # 1', 11, /unexpected character "#"/],
    ["substringof('a' nonsense)", 17, /expected ',' or '\)'/],
    ['not', 4, /expected a value/],
    ['isof(Edm.String)', 9, /unexpected character "\."/],
  ])('%j fails at character %i', (text, position, message) => {
    const error = errorOf(() => parseFilter(text));
    expect(error.status).toBe(400);
    expect(error.message).toMatch(message);
    expect(error.message).toContain(`$filter at character ${position}:`);
  });

  it('refuses string literals holding characters no entry can hold: NUL and unpaired surrogates', () => {
    expect(errorOf(() => parseFilter("nonsense eq 'a\u0000'")).message).toMatch(/\$filter at character 13: a string literal contains the NUL character/);
    expect(errorOf(() => parseFilter("nonsense eq 'a\uD800b'")).message).toMatch(/\$filter at character 13: .*unpaired surrogate/);
    expect(errorOf(() => parseOrderBy("concat(nonsense, '\uDC00')")).message).toMatch(/\$orderby at character 18: .*unpaired surrogate/);
    expect(show(parseFilter("nonsense eq '\u{1F600}'"))).toBe("(nonsense eq '\u{1F600}')");
  });

  it('refuses absurd nesting and length instead of overflowing the stack', () => {
    expect(errorOf(() => parseFilter(`${'('.repeat(500)}a${')'.repeat(500)}`)).message).toMatch(/nested more than/);
    expect(errorOf(() => parseFilter(`${'not '.repeat(300)}a`)).message).toMatch(/nested more than/);
    expect(errorOf(() => parseFilter(`a eq '${'x'.repeat(3000)}'`)).message).toMatch(/longer than/);
  });
});

describe('$orderby parser', () => {
  it('reads items with optional directions', () => {
    const items = parseOrderBy('timestamp desc, nonsense,tolower(nonsense) asc');
    expect(items.map((i) => `${show(i.expression)} ${i.direction}`)).toEqual(['timestamp desc', 'nonsense asc', 'tolower(nonsense) asc']);
  });

  it.each([
    ['', /empty/],
    ['timestamp,', /expected a value/],
    ['timestamp down', /unexpected 'down'/],
    ['timestamp desc desc', /unexpected 'desc'/],
  ])('refuses %j', (text, message) => {
    const error = errorOf(() => parseOrderBy(text));
    expect(error.message).toMatch(message);
    expect(error.message).toContain('$orderby');
  });
});
