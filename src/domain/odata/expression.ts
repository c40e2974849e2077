/**
 * The OData v2 expression language of `$filter` and `$orderby`, as a small recursive-descent parser
 * producing an AST. It knows syntax only; which properties and functions exist, and their types, is the
 * compiler's business (`compile.ts`). Every error names the 1-based character where it was found.
 *
 * Precedence, loosest first, as in the OData v2 URI conventions: `or`, `and`, equality (`eq`, `ne`),
 * relational (`lt`, `le`, `gt`, `ge`), unary `not`, then primaries (literals, properties, function
 * calls, parentheses). Binary operators associate to the left. Operator and function names are
 * matched without regard to case; property names are case-sensitive.
 */
import { ODataRequestError, syntaxError } from './errors.ts';
import { MAX_NESTING, MAX_NODES, MAX_OPTION_LENGTH, MAX_ORDER_KEYS } from './limits.ts';

export type ComparisonOperator = 'eq' | 'ne' | 'gt' | 'ge' | 'lt' | 'le';
export type LogicalOperator = 'and' | 'or';

export type LiteralNode =
  | { kind: 'literal'; type: 'Edm.String'; value: string; position: number }
  | { kind: 'literal'; type: 'Edm.Int32' | 'Edm.Int64'; value: number; position: number }
  | { kind: 'literal'; type: 'Edm.Boolean'; value: boolean; position: number }
  /** A lower-case UUID. */
  | { kind: 'literal'; type: 'Edm.Guid'; value: string; position: number }
  /** Milliseconds since the Unix epoch, UTC; may have a fraction (OData allows 100 ns precision). */
  | { kind: 'literal'; type: 'Edm.DateTime'; value: number; position: number }
  | { kind: 'literal'; type: 'null'; value: null; position: number };

export type ExpressionNode =
  | LiteralNode
  | { kind: 'property'; name: string; position: number }
  | { kind: 'compare'; operator: ComparisonOperator; left: ExpressionNode; right: ExpressionNode; position: number }
  | { kind: 'logical'; operator: LogicalOperator; left: ExpressionNode; right: ExpressionNode; position: number }
  | { kind: 'not'; operand: ExpressionNode; position: number }
  | { kind: 'call'; name: string; args: ExpressionNode[]; position: number };

export interface OrderByItem {
  expression: ExpressionNode;
  direction: 'asc' | 'desc';
}

type Token =
  | { type: 'identifier'; text: string; position: number }
  | { type: 'string'; value: string; position: number }
  | { type: 'number'; text: string; position: number }
  | { type: 'typed'; prefix: string; value: string; position: number }
  | { type: '(' | ')' | ',' | '/' | 'end'; position: number };

const COMPARISONS: ReadonlySet<string> = new Set(['eq', 'ne', 'gt', 'ge', 'lt', 'le']);
const EQUALITY: ReadonlySet<string> = new Set(['eq', 'ne']);
const ARITHMETIC: ReadonlySet<string> = new Set(['add', 'sub', 'mul', 'div', 'mod']);
const TYPED_PREFIXES: ReadonlySet<string> = new Set(['guid', 'datetime', 'datetimeoffset', 'time', 'binary', 'x']);
const KEYWORDS: ReadonlySet<string> = new Set([...COMPARISONS, ...ARITHMETIC, 'and', 'or', 'not', 'asc', 'desc']);

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DATETIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,7}))?)?(Z|[+-]\d{2}:\d{2})?$/;

function describe(token: Token): string {
  switch (token.type) {
    case 'identifier':
      return `'${token.text}'`;
    case 'string':
      return 'a string literal';
    case 'number':
      return `the number ${token.text}`;
    case 'typed':
      return `${token.prefix}'…'`;
    case 'end':
      return 'the end of the expression';
    default:
      return `'${token.type}'`;
  }
}

function tokenize(text: string, option: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
      continue;
    }
    const start = i;
    if (c === '(' || c === ')' || c === ',' || c === '/') {
      tokens.push({ type: c, position: start });
      i++;
      continue;
    }
    if (c === "'") {
      const [value, next] = readQuoted(text, i, option);
      checkStorable(value, option, start);
      tokens.push({ type: 'string', value, position: start });
      i = next;
      continue;
    }
    if (c === '-' || (c >= '0' && c <= '9')) {
      const match = /^-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?[LlMmDdFf]?/.exec(text.slice(i));
      if (!match || match[0] === '-') throw syntaxError(option, start, 'the negation operator "-" is not supported; write negative numbers as literals such as -5');
      tokens.push({ type: 'number', text: match[0], position: start });
      i += match[0].length;
      continue;
    }
    if (/[A-Za-z_]/.test(c)) {
      const match = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(i))!;
      const word = match[0];
      i += word.length;
      if (text[i] === "'" && TYPED_PREFIXES.has(word.toLowerCase())) {
        const [value, next] = readQuoted(text, i, option);
        tokens.push({ type: 'typed', prefix: word.toLowerCase(), value, position: start });
        i = next;
        continue;
      }
      tokens.push({ type: 'identifier', text: word, position: start });
      continue;
    }
    throw syntaxError(option, start, `unexpected character "${c}"`);
  }
  tokens.push({ type: 'end', position: text.length });
  return tokens;
}

/**
 * checkStorable refuses a string literal holding a character no entry can hold: NUL, which
 * PostgreSQL cannot store in text at all, and unpaired surrogates, which have no UTF-8 form (both
 * engines would silently compare a replacement character instead).
 */
function checkStorable(value: string, option: string, position: number): void {
  if (value.includes('\u0000')) {
    throw syntaxError(option, position, 'a string literal contains the NUL character (U+0000), which no entry can contain; remove it');
  }
  if (!value.isWellFormed()) {
    throw syntaxError(option, position, 'a string literal contains an unpaired surrogate (not a Unicode character), which no entry can contain; remove it');
  }
}

/** readQuoted reads a '…' literal starting at the quote; '' inside stands for one quote. */
function readQuoted(text: string, quote: number, option: string): [string, number] {
  let value = '';
  let i = quote + 1;
  for (;;) {
    const end = text.indexOf("'", i);
    if (end === -1) throw syntaxError(option, quote, 'a quoted literal is not closed; close it with \' (write \'\' for a quote inside)');
    value += text.slice(i, end);
    if (text[end + 1] === "'") {
      value += "'";
      i = end + 2;
      continue;
    }
    return [value, end + 1];
  }
}

class Parser {
  private index = 0;
  private depth = 0;
  private nodes = 0;

  constructor(
    private readonly tokens: Token[],
    private readonly option: string,
  ) {}

  private peek(): Token {
    return this.tokens[this.index]!;
  }

  private next(): Token {
    return this.tokens[this.index++]!;
  }

  /** keyword tells whether the next token is the (case-insensitive) word `word`. */
  private keyword(word: string, token = this.peek()): boolean {
    return token.type === 'identifier' && token.text.toLowerCase() === word;
  }

  private error(token: Token, problem: string) {
    return syntaxError(this.option, token.position, problem);
  }

  expectEnd(): void {
    const token = this.peek();
    if (token.type !== 'end') throw this.error(token, `unexpected ${describe(token)}${this.hint(token)}`);
  }

  atEnd(): boolean {
    return this.peek().type === 'end';
  }

  peekComma(): boolean {
    if (this.peek().type !== ',') return false;
    this.index++;
    return true;
  }

  private hint(token: Token): string {
    if (token.type === 'identifier' && ARITHMETIC.has(token.text.toLowerCase())) return ' (arithmetic operators are not supported)';
    if (token.type === 'identifier' && COMPARISONS.has(token.text.toLowerCase())) return ' (put a comparison inside parentheses to combine it further)';
    return '; expected an operator such as eq, and, or';
  }

  /** direction reads an optional asc/desc after an $orderby expression. */
  direction(): 'asc' | 'desc' {
    if (this.keyword('asc')) {
      this.index++;
      return 'asc';
    }
    if (this.keyword('desc')) {
      this.index++;
      return 'desc';
    }
    return 'asc';
  }

  /** node counts every node of the tree against MAX_NODES, so the compiled size is bounded too. */
  private node<T extends ExpressionNode>(node: T): T {
    if (++this.nodes > MAX_NODES) {
      throw this.error(
        { type: 'end', position: node.position },
        `the expression has more than ${MAX_NODES} operators, functions, properties and literals (the limit); split the request or simplify it`,
      );
    }
    return node;
  }

  expression(): ExpressionNode {
    if (++this.depth > MAX_NESTING) throw this.error(this.peek(), `the expression is nested more than ${MAX_NESTING} levels deep (the limit)`);
    const node = this.or();
    this.depth--;
    return node;
  }

  private or(): ExpressionNode {
    let left = this.and();
    while (this.keyword('or')) {
      const position = this.next().position;
      left = this.node({ kind: 'logical', operator: 'or', left, right: this.and(), position });
    }
    return left;
  }

  private and(): ExpressionNode {
    let left = this.equality();
    while (this.keyword('and')) {
      const position = this.next().position;
      left = this.node({ kind: 'logical', operator: 'and', left, right: this.equality(), position });
    }
    return left;
  }

  private equality(): ExpressionNode {
    let left = this.relational();
    for (let token = this.peek(); token.type === 'identifier' && EQUALITY.has(token.text.toLowerCase()); token = this.peek()) {
      this.index++;
      const operator = token.text.toLowerCase() as ComparisonOperator;
      left = this.node({ kind: 'compare', operator, left, right: this.relational(), position: token.position });
    }
    return left;
  }

  private relational(): ExpressionNode {
    let left = this.unary();
    for (let token = this.peek(); token.type === 'identifier'; token = this.peek()) {
      const word = token.text.toLowerCase();
      if (ARITHMETIC.has(word)) throw this.error(token, `the arithmetic operator "${word}" is not supported`);
      if (word === 'isof' || word === 'cast') throw this.error(token, `"${word}" is not supported`);
      if (!COMPARISONS.has(word) || EQUALITY.has(word)) break;
      this.index++;
      left = this.node({ kind: 'compare', operator: word as ComparisonOperator, left, right: this.unary(), position: token.position });
    }
    return left;
  }

  private unary(): ExpressionNode {
    if (this.keyword('not')) {
      const position = this.next().position;
      if (++this.depth > MAX_NESTING) throw this.error(this.peek(), `the expression is nested more than ${MAX_NESTING} levels deep (the limit)`);
      const operand = this.unary();
      this.depth--;
      return this.node({ kind: 'not', operand, position });
    }
    return this.primary();
  }

  private primary(): ExpressionNode {
    const token = this.next();
    switch (token.type) {
      case '(': {
        const inner = this.expression();
        const close = this.next();
        if (close.type !== ')') throw this.error(close, `expected ')' to close the '(' at character ${token.position + 1}, found ${describe(close)}`);
        return inner;
      }
      case 'string':
        return this.node({ kind: 'literal', type: 'Edm.String', value: token.value, position: token.position });
      case 'number':
        return this.node(this.number(token));
      case 'typed':
        return this.node(this.typed(token));
      case 'identifier':
        return this.node(this.identifier(token));
      default:
        throw this.error(token, `expected a value, property or function, found ${describe(token)}`);
    }
  }

  private number(token: Extract<Token, { type: 'number' }>): LiteralNode {
    const match = /^(-?\d+)([Ll]?)$/.exec(token.text);
    if (!match) throw this.error(token, `only integer literals are supported, not ${token.text}`);
    const value = Number(match[1]);
    if (!Number.isSafeInteger(value)) throw this.error(token, `the integer ${token.text} is out of range`);
    // An unsuffixed literal beyond Int32 is taken as Int64 rather than refused: it can only mean that.
    const int32 = match[2] === '' && value >= -2147483648 && value <= 2147483647;
    return { kind: 'literal', type: int32 ? 'Edm.Int32' : 'Edm.Int64', value, position: token.position };
  }

  private typed(token: Extract<Token, { type: 'typed' }>): LiteralNode {
    const { prefix, value, position } = token;
    if (prefix === 'guid') {
      if (!GUID.test(value)) throw this.error(token, `guid'${value.slice(0, 40)}' is not a GUID; write guid'xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx'`);
      return { kind: 'literal', type: 'Edm.Guid', value: value.toLowerCase(), position };
    }
    if (prefix === 'datetime' || prefix === 'datetimeoffset') {
      const ms = parseDateTime(value, prefix === 'datetimeoffset');
      if (ms === null) {
        const form = prefix === 'datetime' ? "datetime'2024-01-31T12:00:00'" : "datetimeoffset'2024-01-31T12:00:00Z'";
        throw this.error(token, `${prefix}'${value.slice(0, 40)}' is not a valid date and time; write it like ${form}`);
      }
      return { kind: 'literal', type: 'Edm.DateTime', value: ms, position };
    }
    throw this.error(token, `${prefix}'…' literals are not supported`);
  }

  private identifier(token: Extract<Token, { type: 'identifier' }>): ExpressionNode {
    const word = token.text.toLowerCase();
    if (word === 'true' || word === 'false') return { kind: 'literal', type: 'Edm.Boolean', value: word === 'true', position: token.position };
    if (word === 'null') return { kind: 'literal', type: 'null', value: null, position: token.position };
    const after = this.peek();
    if (after.type === '(') {
      this.index++;
      const args: ExpressionNode[] = [];
      if (this.peek().type !== ')') {
        do args.push(this.expression());
        while (this.peekComma());
      }
      const close = this.next();
      if (close.type !== ')') throw this.error(close, `expected ',' or ')' in the arguments of ${token.text}, found ${describe(close)}`);
      return { kind: 'call', name: word, args, position: token.position };
    }
    if (KEYWORDS.has(word)) throw this.error(token, `expected a value, property or function, found the operator '${token.text}'`);
    if (after.type === '/') throw this.error(after, 'member access with "/" is not supported: the entity type has no navigation or complex properties');
    return { kind: 'property', name: token.text, position: token.position };
  }
}

/**
 * parseDateTime reads the inside of a datetime'…' (no offset; UTC assumed, a trailing Z tolerated) or
 * datetimeoffset'…' (Z or ±hh:mm) literal into epoch milliseconds, or null when it is not a real instant.
 */
export function parseDateTime(text: string, withOffset: boolean): number | null {
  // Some clients percent-encode the colons of the literal a second time; a literal never contains '%'.
  const value = text.includes('%') ? safeDecode(text) : text;
  const match = DATETIME.exec(value);
  if (!match) return null;
  const [, y, mo, d, h, mi, s = '0', fraction = '', zone] = match;
  if (withOffset && zone === undefined) return null;
  if (!withOffset && zone !== undefined && zone !== 'Z') return null;
  const [year, month, day, hour, minute, second] = [y, mo, d, h, mi, s].map(Number) as [number, number, number, number, number, number];
  if (month < 1 || month > 12 || hour > 23 || minute > 59 || second > 59) return null;
  // Not Date.UTC: it reads the years 0 to 99 as 1900 to 1999.
  const check = new Date(0);
  check.setUTCFullYear(year, month - 1, day);
  check.setUTCHours(hour, minute, second, 0);
  const base = check.getTime();
  if (check.getUTCDate() !== day || check.getUTCMonth() !== month - 1) return null;
  let ms = base + (fraction ? Number(`0.${fraction}`) * 1000 : 0);
  if (zone !== undefined && zone !== 'Z') {
    const sign = zone[0] === '-' ? -1 : 1;
    const [oh, om] = zone.slice(1).split(':').map(Number) as [number, number];
    if (oh > 23 || om > 59) return null;
    ms -= sign * (oh * 60 + om) * 60_000;
  }
  return ms;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function checkLength(text: string, option: string): void {
  if (text.length > MAX_OPTION_LENGTH) {
    throw syntaxError(option, MAX_OPTION_LENGTH, `the option is longer than ${MAX_OPTION_LENGTH} characters (the limit)`);
  }
}

/** parseFilter parses a `$filter` value into its expression. */
export function parseFilter(text: string): ExpressionNode {
  checkLength(text, '$filter');
  const parser = new Parser(tokenize(text, '$filter'), '$filter');
  if (parser.atEnd()) throw syntaxError('$filter', 0, 'the filter is empty');
  const node = parser.expression();
  parser.expectEnd();
  return node;
}

/** parseOrderBy parses a `$orderby` value: comma-separated expressions, each optionally asc or desc. */
export function parseOrderBy(text: string): OrderByItem[] {
  checkLength(text, '$orderby');
  const parser = new Parser(tokenize(text, '$orderby'), '$orderby');
  if (parser.atEnd()) throw syntaxError('$orderby', 0, 'the order is empty');
  const items: OrderByItem[] = [];
  do {
    if (items.length === MAX_ORDER_KEYS) {
      throw new ODataRequestError(`The option $orderby has more than ${MAX_ORDER_KEYS} keys (the limit); order by fewer.`);
    }
    const expression = parser.expression();
    items.push({ expression, direction: parser.direction() });
  } while (parser.peekComma());
  parser.expectEnd();
  return items;
}
