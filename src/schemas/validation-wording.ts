/**
 * Validation errors in the service's words: the first schema error of a request part as a sentence
 * that names the field or parameter and says what it accepts. The API's error handler and
 * `nonsense export` / `nonsense restore` both use it.
 */
import { EXPECTS } from './validator.ts';

/** An Ajv error as the request validator reports it (verbose: with the data and the schema). */
interface SchemaError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  data?: unknown;
  parentSchema?: Schema;
}

interface Schema {
  type?: string | string[];
  format?: string;
  enum?: unknown[];
  const?: unknown;
  anyOf?: Schema[];
  oneOf?: Schema[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  examples?: unknown[];
  [EXPECTS]?: string;
}

const NOUNS: Record<string, string> = { querystring: 'parameter', params: 'path parameter', headers: 'header', body: 'field' };

/** characters counts code points, as the schemas' length limits do. */
function characters(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

/** expectation says in words what a schema accepts: "one of: csv, json, txt", "a UUID such as …". */
function expectation(schema: Schema | undefined): string {
  if (schema === undefined) return 'something else';
  if (schema[EXPECTS] !== undefined) return schema[EXPECTS];
  if (schema.enum !== undefined) return `one of: ${schema.enum.join(', ')}`;
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  const choices = schema.anyOf ?? schema.oneOf;
  if (choices !== undefined) {
    if (choices.every((choice) => choice.const !== undefined)) return `one of: ${choices.map((choice) => choice.const).join(', ')}`;
    return choices.map(expectation).join(' or ');
  }
  const types = ([] as string[]).concat(schema.type ?? []);
  if (types.length > 1) return types.map((type) => expectation({ ...schema, type })).join(' or ');
  switch (types[0]) {
    case 'string':
      if (schema.format === 'uuid') return 'a UUID such as 6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11';
      if (schema.format !== undefined) return `a string in the format ${schema.format}`;
      return schema.maxLength === undefined ? 'a string' : `a string of at most ${schema.maxLength} characters`;
    case 'integer': {
      const { minimum: min, maximum: max } = schema;
      const range =
        min === 0 && (max === undefined || max >= 1e9) ? 'a non-negative integer'
        : min !== undefined && max !== undefined ? `an integer from ${min} to ${max}`
        : min !== undefined ? `an integer of at least ${min}`
        : 'an integer';
      return schema.examples?.[0] === undefined ? range : `${range}, such as ${schema.examples[0]}`;
    }
    case 'number':
      return 'a number';
    case 'boolean':
      return 'true or false';
    case 'null':
      return 'null';
    case 'array': {
      const items = schema.items?.type === 'string' ? 'strings' : 'values';
      const { minItems: min, maxItems: max } = schema;
      if (min !== undefined && max !== undefined) return `a list of ${min} to ${max} ${items}`;
      return max !== undefined ? `a list of at most ${max} ${items}` : `a list of ${items}`;
    }
    case 'object': {
      const names = Object.keys(schema.properties ?? {});
      const required = names.filter((name) => schema.required?.includes(name)).map((name) => `"${name}"`);
      const optional = names.filter((name) => !schema.required?.includes(name)).map((name) => `"${name}"`);
      if (names.length === 0) return 'a JSON object';
      const listed = required.length > 0 ? `${and(required)}${optional.length > 0 ? ` and optionally ${and(optional)}` : ''}` : `any of ${and(optional)}`;
      return `a JSON object with ${listed}`;
    }
    default:
      return 'something else';
  }
}

/** and lists words as a sentence does: `"a", "b" and "c"`. */
function and(words: string[]): string {
  return words.length < 2 ? words.join('') : `${words.slice(0, -1).join(', ')} and ${words.at(-1)}`;
}

/** given names what was sent, briefly. */
function given(data: unknown): string {
  if (typeof data === 'string') return `"${data.length > 40 ? `${data.slice(0, 37)}...` : data}"`;
  if (typeof data === 'number' || typeof data === 'boolean') return String(data);
  if (data === null) return 'null';
  if (Array.isArray(data)) return 'a list';
  return data === undefined ? 'nothing' : 'an object';
}

/** The path of a field as people write it: `values[3]`, `entry.text`. */
function fieldPath(instancePath: string): string {
  return instancePath
    .split('/')
    .slice(1)
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce((path, part) => (/^\d+$/.test(part) ? `${path}[${part}]` : path === '' ? part : `${path}.${part}`), '');
}

/**
 * describeValidation turns the first schema error of a request part (`body`, `querystring`, `params`,
 * `headers`) into a sentence in the service's words, naming the field or parameter, and says which
 * one it is (null when the whole body is wrong). The API and `nonsense export` both use it.
 */
export function describeValidation(ajvErrors: readonly object[], context: string): { detail: string; name: string | null } {
  const errors = ajvErrors as readonly SchemaError[];
  // Of a failed choice (anyOf), the choice itself is described, not the first alternative tried.
  const error = errors.find((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf') ?? errors[0];
  const noun = NOUNS[context] ?? 'field';
  if (error === undefined) return { detail: `The ${context === 'body' ? 'body' : `${noun}s`} of the request are not valid.`, name: null };
  const schema = error.parentSchema;
  const at = fieldPath(error.instancePath);
  if (error.keyword === 'required') {
    const missing = String(error.params.missingProperty);
    const name = at === '' ? missing : `${at}.${missing}`;
    const expected = expectation(schema?.properties?.[missing]);
    return { detail: `The ${noun} "${name}" is required; it must be ${expected}.`, name };
  }
  const subject = at === '' ? (context === 'body' ? 'The body' : `The ${noun}s`) : `The ${noun} "${at}"`;
  const name = at === '' ? null : at;
  const data = error.data;
  if (context !== 'body' && Array.isArray(data)) return { detail: `${subject} is given more than once; give it once.`, name };
  switch (error.keyword) {
    case 'maxLength':
      return { detail: `${subject} has ${characters(String(data))} characters; at most ${error.params.limit} are allowed.`, name };
    case 'minLength':
      return { detail: error.params.limit === 1 ? `${subject} is empty.` : `${subject} has ${characters(String(data))} characters; at least ${error.params.limit} are needed.`, name };
    case 'minItems':
    case 'maxItems':
      return { detail: `${subject} must be ${expectation(schema)}; it has ${(data as unknown[]).length}.`, name };
    case 'additionalProperties':
      return { detail: `${subject} has the unknown field "${String(error.params.additionalProperty)}".`, name };
    default:
      return { detail: `${subject} must be ${expectation(schema)}; got ${given(data)}.`, name };
  }
}
