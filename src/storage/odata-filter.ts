/**
 * The OData query language in SQL, beside the one entry query that runs it (`entry-query.ts`):
 * compiles `$filter` and `$orderby` expressions (parsed in `domain/odata/`) into Kysely expressions
 * over the `entries` table. No SQL is assembled from input: every literal is a bound parameter, every column a reference, and the
 * only raw SQL words come from fixed tables here. What differs between engines goes through
 * `EngineQuirks`. Type errors (comparing a string with a number, `not` on a string) are reported with
 * the 1-based character of the offending operator or function.
 *
 * How properties map to columns (see docs/odata.md):
 * - `uuid` → `entries.uuid` (stored lower case; guid literals are lower-cased by the parser);
 * - `nonsense` → `entries.text`, the stored raw text. The delivered text has server variables replaced
 *   by a random value at read time, so it cannot be filtered on; for entries without variables the
 *   two are the same;
 * - `original_nonsense` → the raw text when it contains a known variable, else null (the API's rule);
 * - `timestamp` → `entries.created_at` (Unix seconds); `created` → the same column compared as an
 *   instant: datetime literals become Unix seconds, UTC;
 * - `multiline` → whether the raw text contains `\n` or `\r`.
 *
 * Comparisons follow OData's two-valued logic: a null `original_nonsense` is `eq null`, `ne 'x'`, and
 * never `gt` anything, so `not (…)` always means the complement. Every compiled condition is therefore
 * never SQL NULL, which lets two conditions be compared with a plain `=`.
 *
 * Size: no rewrite repeats a compiled subtree that may itself contain a rewrite, so the SQL and its
 * parameters grow linearly with the expression (a test holds this on both engines). Null-aware
 * comparisons use `is [not] distinct from` and `(…) is true` instead of spelling out the null cases, a
 * boolean comparison compares the two conditions once each, and `and`/`or` chains are flattened. The
 * one repetition left is `endswith`, whose two string arguments appear twice each; its result is a
 * condition, which no string function takes, so the repetition never compounds. Bound parameters are
 * counted against MAX_PARAMETERS as they are made.
 */
import { sql, type Expression, type RawBuilder, type SqlBool } from 'kysely';
import type { EngineQuirks } from '../db/dialects/quirks.ts';
import { ODataRequestError } from '../domain/odata/errors.ts';
import { MAX_PARAMETERS } from '../domain/odata/limits.ts';
import type { ComparisonOperator, ExpressionNode, LiteralNode, OrderByItem } from '../domain/odata/expression.ts';
import { propertyNamed, PROPERTY_NAMES, type EdmType } from '../domain/odata/model.ts';
import type { EntryOrderKey, TimestampRange } from './entry-query.ts';

export interface CompileContext {
  quirks: EngineQuirks;
  /** Every known variable token (server and client-side); `original_nonsense` is non-null when the text holds one. */
  variableTokens: readonly string[];
}

/** A compiled value: SQL, its EDM type, whether it can be null, and what it came from. */
interface Value {
  kind: 'value';
  sql: Expression<unknown>;
  type: EdmType | 'null';
  nullable: boolean;
  /** Set when the value is a literal (its SQL is a bound parameter). */
  literal?: LiteralNode;
  /** Set when the value is a plain immutable column, which keyset paging can resume on. */
  column?: 'created_at' | 'uuid';
}

/** A compiled Edm.Boolean: a SQL condition that is never null (true or false, on both engines). */
interface Predicate {
  kind: 'predicate';
  sql: Expression<SqlBool>;
  /** Set when the condition is exactly "the timestamp is within these bounds" (a comparison with a literal). */
  range?: TimestampRange;
}

type Compiled = Value | Predicate;

const SQL_OPERATOR: Readonly<Record<ComparisonOperator, string>> = { eq: '=', ne: '<>', gt: '>', ge: '>=', lt: '<', le: '<=' };
const FLIPPED: Readonly<Record<ComparisonOperator, ComparisonOperator>> = { eq: 'eq', ne: 'ne', gt: 'lt', ge: 'le', lt: 'gt', le: 'ge' };

const TRUE: Predicate = { kind: 'predicate', sql: sql<SqlBool>`1 = 1` };
const FALSE: Predicate = { kind: 'predicate', sql: sql<SqlBool>`1 = 0` };

const TEXT = sql.ref('entries.text');

const SUPPORTED_FUNCTIONS = ['substringof', 'startswith', 'endswith', 'tolower', 'toupper', 'length', 'indexof', 'trim', 'concat', 'substring'];

function typeName(c: Compiled): string {
  if (c.kind === 'predicate') return 'Edm.Boolean';
  return c.type === 'null' ? 'null' : c.type;
}

function at(node: ExpressionNode): string {
  return ` (at character ${node.position + 1})`;
}

function not(p: Predicate): Predicate {
  if (p === TRUE) return FALSE;
  if (p === FALSE) return TRUE;
  return { kind: 'predicate', sql: sql<SqlBool>`(not ${p.sql})` };
}

/** isTrue makes a condition that may be SQL NULL (an operand was null) false instead, without repeating it. */
function isTrue(condition: Expression<SqlBool>): Predicate {
  return { kind: 'predicate', sql: sql<SqlBool>`((${condition}) is true)` };
}

/** The longest text an entry can have; a substring start or length past it acts like it. */
const TEXT_LIMIT = 2000;

function isNumeric(type: string): boolean {
  return type === 'Edm.Int32' || type === 'Edm.Int64';
}

class Compiler {
  private hasVariable: Expression<SqlBool> | undefined;
  private parameters = 0;

  constructor(
    private readonly context: CompileContext,
    private readonly option: string,
  ) {}

  /** param binds a value as a parameter, counting it against MAX_PARAMETERS. */
  private param(value: unknown, node?: ExpressionNode): RawBuilder<unknown> {
    this.count(1, node);
    return sql`${value}`;
  }

  private count(parameters: number, node?: ExpressionNode): void {
    this.parameters += parameters;
    if (this.parameters > MAX_PARAMETERS) {
      throw new ODataRequestError(
        `${this.option} needs more than ${MAX_PARAMETERS} bound parameters (the limit)${node ? at(node) : ''}; ` +
          'each literal takes one, and each use of original_nonsense one per known variable. Simplify the expression.',
      );
    }
  }

  private position(haystack: Expression<unknown>, needle: Expression<unknown>): Expression<number | null> {
    return this.context.quirks.stringPosition(haystack as Expression<string>, needle as Expression<string>);
  }

  /** The condition "the raw text contains a known variable": one position test per token. */
  private containsVariable(): Expression<SqlBool> {
    // The expression is built once; each use repeats its parameters in the SQL, so each use counts.
    this.hasVariable ??=
      this.context.variableTokens.length === 0
        ? FALSE.sql
        : sql<SqlBool>`(${sql.join(
            this.context.variableTokens.map((token) => sql`${this.position(TEXT, sql`${token}`)} > 0`),
            sql` or `,
          )})`;
    this.count(this.context.variableTokens.length);
    return this.hasVariable;
  }

  compile(node: ExpressionNode): Compiled {
    switch (node.kind) {
      case 'literal':
        return this.literal(node);
      case 'property':
        return this.property(node);
      case 'not':
        return not(this.predicate(node.operand, `not${at(node)}`));
      case 'logical':
        return this.logical(node);
      case 'compare':
        return this.compare(node);
      case 'call':
        return this.call(node);
    }
  }

  /** orderKeys compiles one `$orderby` item into its keys (two for a nullable value: is-null, then the value). */
  orderKeys(expression: ExpressionNode, direction: 'asc' | 'desc'): EntryOrderKey[] {
    const before = this.parameters;
    const compiled = this.compile(expression);
    if (compiled.kind === 'predicate') return [{ expression: sql`(case when ${compiled.sql} then 1 else 0 end)`, direction }];
    if (compiled.literal) throw new ODataRequestError(`$orderby needs a property or an expression of properties, not a literal${at(expression)}.`);
    if (compiled.column) return [{ column: compiled.column, direction }];
    if (!compiled.nullable) return [{ expression: compiled.sql, direction }];
    // The value appears in both keys.
    this.count(this.parameters - before, expression);
    return [
      { expression: sql`(case when ${compiled.sql} is null then 0 else 1 end)`, direction },
      { expression: compiled.sql, direction },
    ];
  }

  /** predicate compiles a node that must be Edm.Boolean. */
  predicate(node: ExpressionNode, role: string): Predicate {
    const compiled = this.compile(node);
    if (compiled.kind !== 'predicate') {
      throw new ODataRequestError(`${role} needs a condition (Edm.Boolean), but got ${typeName(compiled)}${at(node)}.`);
    }
    return compiled;
  }

  /**
   * logical compiles a chain of one operator (`a or b or c`, parsed as a left-leaning tree) into one
   * flat SQL list, so that long chains do not nest parentheses as deep as they are long.
   */
  private logical(node: Extract<ExpressionNode, { kind: 'logical' }>): Predicate {
    return combine(this.operands(node, node.operator), node.operator);
  }

  /** operands compiles the operands of a chain of `operator` (a single operand when `node` is none). */
  operands(node: ExpressionNode, operator: 'and' | 'or'): Predicate[] {
    const operands: ExpressionNode[] = [];
    const roles: string[] = [];
    let current: ExpressionNode = node;
    while (current.kind === 'logical' && current.operator === operator) {
      operands.push(current.right);
      roles.push(`${current.operator}${at(current)}`);
      current = current.left;
    }
    operands.push(current);
    roles.push(roles[roles.length - 1] ?? 'The $filter');
    operands.reverse();
    roles.reverse();
    return operands.map((operand, i) => this.predicate(operand, roles[i]!));
  }

  private literal(node: LiteralNode): Compiled {
    switch (node.type) {
      case 'Edm.Boolean':
        return node.value ? TRUE : FALSE;
      case 'null':
        return { kind: 'value', sql: sql`null`, type: 'null', nullable: true, literal: node };
      case 'Edm.String':
        // The cast gives PostgreSQL a type for a parameter that is a function's argument.
        return { kind: 'value', sql: sql`cast(${this.param(node.value, node)} as text)`, type: node.type, nullable: false, literal: node };
      case 'Edm.DateTime':
        // Only comparisons use it; they bind their own seconds (see compareValues).
        return { kind: 'value', sql: sql`null`, type: node.type, nullable: false, literal: node };
      case 'Edm.Int64':
        // PostgreSQL would take an untyped parameter beside length(…) as a 32-bit integer and fail on
        // a larger value; the cast keeps every safe integer exact on both engines.
        return { kind: 'value', sql: sql`cast(${this.param(node.value, node)} as bigint)`, type: node.type, nullable: false, literal: node };
      default:
        return { kind: 'value', sql: this.param(node.value, node), type: node.type, nullable: false, literal: node };
    }
  }

  private property(node: Extract<ExpressionNode, { kind: 'property' }>): Compiled {
    const definition = propertyNamed(node.name);
    if (!definition) {
      throw new ODataRequestError(`Unknown property '${node.name}'${at(node)}; the properties are ${PROPERTY_NAMES.join(', ')}.`);
    }
    switch (definition.name) {
      case 'uuid':
        return { kind: 'value', sql: sql.ref('entries.uuid'), type: 'Edm.Guid', nullable: false, column: 'uuid' };
      case 'nonsense':
        return { kind: 'value', sql: TEXT, type: 'Edm.String', nullable: false };
      case 'original_nonsense':
        return { kind: 'value', sql: sql`(case when ${this.containsVariable()} then ${TEXT} else null end)`, type: 'Edm.String', nullable: true };
      case 'timestamp':
        return { kind: 'value', sql: sql.ref('entries.created_at'), type: 'Edm.Int64', nullable: false, column: 'created_at' };
      case 'created':
        return { kind: 'value', sql: sql.ref('entries.created_at'), type: 'Edm.DateTime', nullable: false, column: 'created_at' };
      case 'multiline':
        return {
          kind: 'predicate',
          sql: sql<SqlBool>`(${this.position(TEXT, this.param('\n', node))} > 0 or ${this.position(TEXT, this.param('\r', node))} > 0)`,
        };
    }
  }

  private compare(node: Extract<ExpressionNode, { kind: 'compare' }>): Predicate {
    const left = this.compile(node.left);
    const right = this.compile(node.right);
    const { operator } = node;
    const equality = operator === 'eq' || operator === 'ne';

    if (left.kind === 'predicate' || right.kind === 'predicate') {
      if (left.kind !== 'predicate' || right.kind !== 'predicate') {
        throw new ODataRequestError(`Cannot compare ${typeName(left)} with ${typeName(right)}${at(node)}.`);
      }
      if (!equality) throw new ODataRequestError(`Edm.Boolean values can only be compared with eq or ne${at(node)}.`);
      if (left === TRUE || left === FALSE || right === TRUE || right === FALSE) {
        const [constant, other] = left === TRUE || left === FALSE ? [left, right] : [right, left];
        const same = constant === TRUE ? other : not(other);
        return operator === 'eq' ? same : not(same);
      }
      // Conditions are never null, so SQL equality of the two truth values is OData's; each side once.
      return { kind: 'predicate', sql: sql<SqlBool>`((${left.sql}) ${sql.raw(operator === 'eq' ? '=' : '<>')} (${right.sql}))` };
    }

    if (left.type === 'null' || right.type === 'null') {
      if (!equality) throw new ODataRequestError(`null can only be compared with eq or ne${at(node)}.`);
      const other = left.type === 'null' ? right : left;
      const isNull: Predicate =
        other.type === 'null' ? TRUE : !other.nullable ? FALSE : { kind: 'predicate', sql: sql<SqlBool>`${other.sql} is null` };
      return operator === 'eq' ? isNull : not(isNull);
    }

    const comparable = left.type === right.type || (isNumeric(left.type) && isNumeric(right.type));
    if (!comparable) throw new ODataRequestError(`Cannot compare ${left.type} with ${right.type}${at(node)}.`);

    if (left.literal && right.literal) return compareLiterals(left.literal, operator, right.literal) ? TRUE : FALSE;
    // Literal on the right from here on.
    if (left.literal) return this.compareValues(right, FLIPPED[operator], left, node);
    return this.compareValues(left, operator, right, node);
  }

  private compareValues(left: Value, operator: ComparisonOperator, right: Value, node: ExpressionNode): Predicate {
    let rightSql = right.sql;
    let op = operator;
    let literalValue = right.literal?.value;
    if (right.literal?.type === 'Edm.DateTime') {
      // `created` is stored in whole seconds; an instant with a fraction of a second falls between two
      // of them, which decides every comparison without a non-integer parameter.
      const seconds = right.literal.value / 1000;
      if (Number.isInteger(seconds)) {
        literalValue = seconds;
      } else if (op === 'eq' || op === 'ne') {
        return op === 'eq' ? FALSE : TRUE;
      } else {
        const gt = op === 'gt' || op === 'ge';
        literalValue = gt ? Math.floor(seconds) : Math.ceil(seconds);
        op = gt ? 'gt' : 'lt';
      }
      rightSql = this.param(literalValue, node);
    }
    if (!left.nullable && !right.nullable) {
      return { kind: 'predicate', sql: sql<SqlBool>`${left.sql} ${sql.raw(SQL_OPERATOR[op])} ${rightSql}`, ...timestampRange(left, op, right.literal ? literalValue : undefined) };
    }
    // Two nulls are equal, a null and a value are not; a null is in no order. Each side appears once.
    if (op === 'eq') return { kind: 'predicate', sql: sql<SqlBool>`(${left.sql} is not distinct from ${rightSql})` };
    if (op === 'ne') return { kind: 'predicate', sql: sql<SqlBool>`(${left.sql} is distinct from ${rightSql})` };
    return isTrue(sql<SqlBool>`${left.sql} ${sql.raw(SQL_OPERATOR[op])} ${rightSql}`);
  }

  private value(node: ExpressionNode, fn: string, allowed: readonly EdmType[]): Value {
    const compiled = this.compile(node);
    const type = typeName(compiled);
    if (compiled.kind !== 'value' || compiled.type === 'null' || !allowed.includes(compiled.type)) {
      throw new ODataRequestError(`The function ${fn} expects ${allowed.join(' or ')} here, but got ${type}${at(node)}.`);
    }
    return compiled;
  }

  private call(node: Extract<ExpressionNode, { kind: 'call' }>): Compiled {
    const arity: Readonly<Record<string, [number, number]>> = {
      substringof: [2, 2], startswith: [2, 2], endswith: [2, 2], tolower: [1, 1], toupper: [1, 1],
      length: [1, 1], indexof: [2, 2], trim: [1, 1], concat: [2, 2], substring: [2, 3],
    };
    const range = arity[node.name];
    if (!range) {
      throw new ODataRequestError(`The function '${node.name}' is not supported${at(node)}; the supported functions are ${SUPPORTED_FUNCTIONS.join(', ')}.`);
    }
    const [min, max] = range;
    if (node.args.length < min || node.args.length > max) {
      const expected = min === max ? `${min}` : `${min} or ${max}`;
      throw new ODataRequestError(`The function ${node.name} takes ${expected} argument${max === 1 ? '' : 's'}, got ${node.args.length}${at(node)}.`);
    }
    const string = (i: number) => this.value(node.args[i]!, node.name, ['Edm.String']);
    const integer = (i: number) => this.value(node.args[i]!, node.name, ['Edm.Int32', 'Edm.Int64']);
    const nullable = (...values: Value[]) => values.some((v) => v.nullable);
    // A function of a null is null, which a condition turns into false.
    const guarded = (values: Value[], condition: Expression<SqlBool>): Predicate =>
      values.some((v) => v.nullable) ? isTrue(condition) : { kind: 'predicate', sql: condition };
    /** A literal integer argument, clamped to what can matter for a text of at most TEXT_LIMIT characters. */
    const position = (i: number, what: string): Value => {
      const value = integer(i);
      if (!value.literal) return value;
      const number = value.literal.value as number;
      if (number < 0) throw new ODataRequestError(`The ${what} of substring must not be negative${at(node.args[i]!)}.`);
      // An untyped parameter beside + 1 is a 32-bit integer on PostgreSQL; past the longest text every
      // value acts the same, so the clamp keeps the answer and the parameter small.
      return { ...value, sql: this.param(Math.min(number, TEXT_LIMIT + 1), node.args[i]), type: 'Edm.Int32' };
    };
    const stringValue = (expression: RawBuilder<unknown>, ...from: Value[]): Value => ({
      kind: 'value', sql: expression, type: 'Edm.String', nullable: nullable(...from),
    });
    const intValue = (expression: RawBuilder<unknown>, ...from: Value[]): Value => ({
      kind: 'value', sql: expression, type: 'Edm.Int32', nullable: nullable(...from),
    });

    switch (node.name) {
      case 'substringof': {
        // OData v2 order: substringof(needle, haystack).
        const [needle, haystack] = [string(0), string(1)];
        return guarded([needle, haystack], sql<SqlBool>`${this.position(haystack.sql, needle.sql)} > 0`);
      }
      case 'startswith': {
        // The first occurrence is at the start exactly when the text starts with it ('' is at 1).
        const [text, prefix] = [string(0), string(1)];
        return guarded([text, prefix], sql<SqlBool>`${this.position(text.sql, prefix.sql)} = 1`);
      }
      case 'endswith': {
        // The tail as long as the suffix; a text shorter than the suffix gives a shorter, unequal tail
        // (substr from a start before the first character), and '' gives ''. Both arguments appear
        // twice, the one repetition of the compiler (see the top of this file).
        const before = this.parameters;
        const [text, suffix] = [string(0), string(1)];
        this.count(this.parameters - before, node);
        return guarded([text, suffix], sql<SqlBool>`substr(${text.sql}, length(${text.sql}) - length(${suffix.sql}) + 1) = ${suffix.sql}`);
      }
      case 'tolower': {
        const text = string(0);
        return stringValue(sql`lower(${text.sql})`, text);
      }
      case 'toupper': {
        const text = string(0);
        return stringValue(sql`upper(${text.sql})`, text);
      }
      case 'trim': {
        const text = string(0);
        return stringValue(sql`trim(${text.sql})`, text);
      }
      case 'concat': {
        const [a, b] = [string(0), string(1)];
        return stringValue(sql`(${a.sql} || ${b.sql})`, a, b);
      }
      case 'length': {
        const text = string(0);
        return intValue(sql`length(${text.sql})`, text);
      }
      case 'indexof': {
        // OData counts from 0 and answers -1 when absent; SQL positions count from 1 with 0 for absent.
        const [text, needle] = [string(0), string(1)];
        return intValue(sql`(${this.position(text.sql, needle.sql)} - 1)`, text, needle);
      }
      default: {
        const text = string(0);
        const start = position(1, 'start');
        if (node.args.length === 2) return stringValue(sql`substr(${text.sql}, ${start.sql} + 1)`, text, start);
        const length = position(2, 'length');
        return stringValue(sql`substr(${text.sql}, ${start.sql} + 1, ${length.sql})`, text, start, length);
      }
    }
  }
}

/**
 * timestampRange is the range a comparison of the timestamp column with an integer literal (or an
 * instant, already in whole seconds) selects, so that the entry query can seek its index to it.
 */
function timestampRange(left: Value, op: ComparisonOperator, value: unknown): { range: TimestampRange } | Record<never, never> {
  if (left.column !== 'created_at' || typeof value !== 'number' || !Number.isInteger(value)) return {};
  switch (op) {
    case 'eq':
      return { range: { from: value, to: value } };
    case 'gt':
      return { range: { from: value + 1 } };
    case 'ge':
      return { range: { from: value } };
    case 'lt':
      return { range: { to: value - 1 } };
    case 'le':
      return { range: { to: value } };
    case 'ne':
      return {};
  }
}

/** combine joins compiled conditions with `and` or `or`, dropping what cannot change the answer. */
function combine(parts: Predicate[], operator: 'and' | 'or'): Predicate {
  const absorbing = operator === 'and' ? FALSE : TRUE;
  if (parts.includes(absorbing)) return absorbing;
  const kept = parts.filter((p) => p !== (operator === 'and' ? TRUE : FALSE));
  if (kept.length === 0) return operator === 'and' ? TRUE : FALSE;
  if (kept.length === 1) return kept[0]!;
  return { kind: 'predicate', sql: sql<SqlBool>`(${sql.join(kept.map((p) => p.sql), operator === 'and' ? sql` and ` : sql` or `)})` };
}

function compareLiterals(left: LiteralNode, operator: ComparisonOperator, right: LiteralNode): boolean {
  const a = left.value as string | number;
  const b = right.value as string | number;
  switch (operator) {
    case 'eq':
      return a === b;
    case 'ne':
      return a !== b;
    case 'gt':
      return a > b;
    case 'ge':
      return a >= b;
    case 'lt':
      return a < b;
    case 'le':
      return a <= b;
  }
}

/** compileFilter turns a parsed `$filter` into a condition on `entries`. */
export function compileFilter(node: ExpressionNode, context: CompileContext): Expression<SqlBool> {
  return new Compiler(context, '$filter').predicate(node, 'The $filter').sql;
}

/** A `$filter` as the entry query takes it: the timestamp's range, and the condition on the rest. */
export interface CompiledFilter {
  range?: TimestampRange;
  where?: Expression<SqlBool>;
}

/**
 * compileFilterWithRange turns a parsed `$filter` into the range of the timestamp its top-level `and`
 * chain asks for (`timestamp gt …`, `created lt datetime'…'`) and a condition for the rest, so that the
 * entry query seeks its index to the tighter of the range and a walk's cursor (a walk with such a
 * filter then costs the same for every page). Together they select what compileFilter's condition does.
 */
export function compileFilterWithRange(node: ExpressionNode, context: CompileContext): CompiledFilter {
  const rest: Predicate[] = [];
  let range: TimestampRange | undefined;
  for (const part of new Compiler(context, '$filter').operands(node, 'and')) {
    if (part.range === undefined) {
      rest.push(part);
      continue;
    }
    range ??= {};
    if (part.range.from !== undefined) range.from = Math.max(range.from ?? part.range.from, part.range.from);
    if (part.range.to !== undefined) range.to = Math.min(range.to ?? part.range.to, part.range.to);
  }
  const where = rest.length === 0 ? undefined : combine(rest, 'and');
  return { ...(range ? { range } : {}), ...(where && where !== TRUE ? { where: where.sql } : {}) };
}

/**
 * compileOrderBy turns a parsed `$orderby` into order keys. A nullable value sorts its nulls first in
 * ascending order on every engine (an explicit is-null key, since engines disagree on the default); a
 * condition sorts false before true.
 */
export function compileOrderBy(items: readonly OrderByItem[], context: CompileContext): EntryOrderKey[] {
  const compiler = new Compiler(context, '$orderby');
  return items.flatMap(({ expression, direction }) => compiler.orderKeys(expression, direction));
}
