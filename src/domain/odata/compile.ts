/**
 * Compiles `$filter` and `$orderby` expressions into Kysely expressions over the `entries` table. No
 * SQL is assembled from input: every literal is a bound parameter, every column a reference, and the
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
 * never `gt` anything, so `not (…)` always means the complement.
 */
import { sql, type Expression, type RawBuilder, type SqlBool } from 'kysely';
import type { EngineQuirks } from '../../db/dialects/quirks.ts';
import type { EntryOrderKey } from '../../storage/entry-query.ts';
import { ODataRequestError } from './errors.ts';
import type { ComparisonOperator, ExpressionNode, LiteralNode, OrderByItem } from './expression.ts';
import { propertyNamed, PROPERTY_NAMES, type EdmType } from './model.ts';

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

/** A compiled Edm.Boolean: a SQL condition that is never null. */
interface Predicate {
  kind: 'predicate';
  sql: Expression<SqlBool>;
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

function and(parts: Expression<SqlBool>[]): Expression<SqlBool> {
  return parts.length === 1 ? parts[0]! : sql<SqlBool>`(${sql.join(parts, sql` and `)})`;
}

function isNumeric(type: string): boolean {
  return type === 'Edm.Int32' || type === 'Edm.Int64';
}

class Compiler {
  private hasVariable: Expression<SqlBool> | undefined;

  constructor(private readonly context: CompileContext) {}

  private position(haystack: Expression<unknown>, needle: Expression<unknown>): Expression<number | null> {
    return this.context.quirks.stringPosition(haystack as Expression<string>, needle as Expression<string>);
  }

  /** The condition "the raw text contains a known variable": one position test per token. */
  private containsVariable(): Expression<SqlBool> {
    this.hasVariable ??=
      this.context.variableTokens.length === 0
        ? FALSE.sql
        : sql<SqlBool>`(${sql.join(
            this.context.variableTokens.map((token) => sql`${this.position(TEXT, sql`${token}`)} > 0`),
            sql` or `,
          )})`;
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
      case 'logical': {
        const left = this.predicate(node.left, `${node.operator}${at(node)}`);
        const right = this.predicate(node.right, `${node.operator}${at(node)}`);
        const joiner = node.operator === 'and' ? sql` and ` : sql` or `;
        return { kind: 'predicate', sql: sql<SqlBool>`(${left.sql}${joiner}${right.sql})` };
      }
      case 'compare':
        return this.compare(node);
      case 'call':
        return this.call(node);
    }
  }

  /** predicate compiles a node that must be Edm.Boolean. */
  predicate(node: ExpressionNode, role: string): Predicate {
    const compiled = this.compile(node);
    if (compiled.kind !== 'predicate') {
      throw new ODataRequestError(`${role} needs a condition (Edm.Boolean), but got ${typeName(compiled)}${at(node)}.`);
    }
    return compiled;
  }

  private literal(node: LiteralNode): Compiled {
    switch (node.type) {
      case 'Edm.Boolean':
        return node.value ? TRUE : FALSE;
      case 'null':
        return { kind: 'value', sql: sql`null`, type: 'null', nullable: true, literal: node };
      case 'Edm.String':
        // The cast gives PostgreSQL a type for a parameter that is a function's argument.
        return { kind: 'value', sql: sql`cast(${node.value} as text)`, type: node.type, nullable: false, literal: node };
      case 'Edm.DateTime':
        // Only comparisons use it; they convert to seconds there (see compare).
        return { kind: 'value', sql: sql`${Math.floor(node.value / 1000)}`, type: node.type, nullable: false, literal: node };
      default:
        return { kind: 'value', sql: sql`${node.value}`, type: node.type, nullable: false, literal: node };
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
          sql: sql<SqlBool>`(${this.position(TEXT, sql`${'\n'}`)} > 0 or ${this.position(TEXT, sql`${'\r'}`)} > 0)`,
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
      const same: Predicate =
        right === TRUE ? left : right === FALSE ? not(left) : left === TRUE ? right : left === FALSE ? not(right) : {
          kind: 'predicate',
          sql: sql<SqlBool>`((${left.sql} and ${right.sql}) or (not ${left.sql} and not ${right.sql}))`,
        };
      return operator === 'eq' ? same : not(same);
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
    if (left.literal) return this.compareValues(right, FLIPPED[operator], left);
    return this.compareValues(left, operator, right);
  }

  private compareValues(left: Value, operator: ComparisonOperator, right: Value): Predicate {
    let rightSql = right.sql;
    let op = operator;
    if (right.literal?.type === 'Edm.DateTime') {
      // `created` is stored in whole seconds; an instant with a fraction of a second falls between two
      // of them, which decides every comparison without a non-integer parameter.
      const seconds = right.literal.value / 1000;
      if (Number.isInteger(seconds)) {
        rightSql = sql`${seconds}`;
      } else if (op === 'eq' || op === 'ne') {
        return op === 'eq' ? FALSE : TRUE;
      } else {
        const gt = op === 'gt' || op === 'ge';
        rightSql = sql`${gt ? Math.floor(seconds) : Math.ceil(seconds)}`;
        op = gt ? 'gt' : 'lt';
      }
    }
    const comparison = sql<SqlBool>`${left.sql} ${sql.raw(SQL_OPERATOR[op])} ${rightSql}`;
    if (!left.nullable && !right.nullable) return { kind: 'predicate', sql: comparison };
    const notNull = [left, right].filter((v) => v.nullable).map((v) => sql<SqlBool>`${v.sql} is not null`);
    if (op === 'eq' || op === 'ne') {
      // Two nulls are equal, a null and a value are not.
      const bothNull = left.nullable && right.nullable ? sql<SqlBool>`(${left.sql} is null and ${right.sql} is null) or ` : sql``;
      const equal: Predicate = {
        kind: 'predicate',
        sql: sql<SqlBool>`(${bothNull}${and([...notNull, sql<SqlBool>`${left.sql} = ${rightSql}`])})`,
      };
      return op === 'eq' ? equal : not(equal);
    }
    return { kind: 'predicate', sql: and([...notNull, comparison]) };
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
    const guarded = (values: Value[], condition: Expression<SqlBool>): Predicate => ({
      kind: 'predicate',
      sql: and([...values.filter((v) => v.nullable).map((v) => sql<SqlBool>`${v.sql} is not null`), condition]),
    });
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
        const [text, prefix] = [string(0), string(1)];
        return guarded([text, prefix], sql<SqlBool>`substr(${text.sql}, 1, length(${prefix.sql})) = ${prefix.sql}`);
      }
      case 'endswith': {
        const [text, suffix] = [string(0), string(1)];
        return guarded(
          [text, suffix],
          sql<SqlBool>`(length(${text.sql}) >= length(${suffix.sql}) and substr(${text.sql}, length(${text.sql}) - length(${suffix.sql}) + 1) = ${suffix.sql})`,
        );
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
        const start = integer(1);
        if (start.literal && (start.literal.value as number) < 0) {
          throw new ODataRequestError(`The start of substring must not be negative${at(node.args[1]!)}.`);
        }
        if (node.args.length === 2) return stringValue(sql`substr(${text.sql}, ${start.sql} + 1)`, text, start);
        const length = integer(2);
        if (length.literal && (length.literal.value as number) < 0) {
          throw new ODataRequestError(`The length of substring must not be negative${at(node.args[2]!)}.`);
        }
        return stringValue(sql`substr(${text.sql}, ${start.sql} + 1, ${length.sql})`, text, start, length);
      }
    }
  }
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
  return new Compiler(context).predicate(node, 'The $filter').sql;
}

/**
 * compileOrderBy turns a parsed `$orderby` into order keys. A nullable value sorts its nulls first in
 * ascending order on every engine (an explicit is-null key, since engines disagree on the default); a
 * condition sorts false before true.
 */
export function compileOrderBy(items: readonly OrderByItem[], context: CompileContext): EntryOrderKey[] {
  const compiler = new Compiler(context);
  const keys: EntryOrderKey[] = [];
  for (const { expression, direction } of items) {
    const compiled = compiler.compile(expression);
    if (compiled.kind === 'predicate') {
      keys.push({ expression: sql`(case when ${compiled.sql} then 1 else 0 end)`, direction });
      continue;
    }
    if (compiled.literal) throw new ODataRequestError(`$orderby needs a property or an expression of properties, not a literal${at(expression)}.`);
    if (compiled.column) {
      keys.push({ column: compiled.column, direction });
      continue;
    }
    if (compiled.nullable) keys.push({ expression: sql`(case when ${compiled.sql} is null then 0 else 1 end)`, direction });
    keys.push({ expression: compiled.sql, direction });
  }
  return keys;
}
