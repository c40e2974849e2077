/**
 * How request schemas validate: one Ajv (JSON Schema 2020-12, the dialect of OpenAPI 3.1) for the
 * HTTP routes and for `nonsense export`, so the command line and the API accept exactly the same
 * parameters. Errors are described for people by `describeValidation` (validation-wording.ts).
 *
 * Query strings, path parameters and headers arrive as text. Ajv's own coercion would take `1e3`,
 * ` 12` or `0x10` for numbers, so integers are read here instead: decimal digits only, anything else
 * stays text and fails its schema. A repeated parameter (`?q=a&q=b`) arrives as a list and fails too,
 * which the description turns into "given more than once". Bodies are JSON and never coerced.
 *
 * Schemas are compiled on first use, not when a route is declared (runtime/compile-later.ts).
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { FastifySchema } from 'fastify';
import { compileLater } from '../runtime/compile-later.ts';

/** The part of a request a schema checks, named as Fastify names it. */
export type HttpPart = 'body' | 'querystring' | 'params' | 'headers';

/**
 * `x-expects`: what a value must be, in words, for messages (e.g. "an emoji name: 2 to 32 of a-z, 0-9
 * and _"), where the keywords alone would make a poor sentence. An annotation: it validates nothing.
 */
export const EXPECTS = 'x-expects';

/**
 * `x-trimmed-length`: `{ min, max }`, the length in characters a text must have once trimmed, which
 * its `pattern` (trimmedLengthPattern) says to every client. When that pattern refuses a text, the
 * error is reported as the length counted, `minLength` or `maxLength` of the trimmed text, so the
 * detail says "is empty" or "has 2001 characters; at most 2000 are allowed" rather than quoting a
 * regular expression. An annotation: the pattern validates.
 */
export const TRIMMED_LENGTH = 'x-trimmed-length';

/** trimmedLengthPattern matches a text of `min` (at least 1) to `max` characters once white space around it is trimmed. */
export function trimmedLengthPattern(min: number, max: number): string {
  const inner = min <= 1 ? `(?:[\\s\\S]{0,${max - 2}}\\S)?` : `[\\s\\S]{${min - 2},${max - 2}}\\S`;
  return `^\\s*\\S${inner}\\s*$`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function createAjv(): Ajv2020 {
  // allErrors stays off: stopping at the first error bounds the work a hostile document can cause.
  // verbose keeps each error's data and schema, from which the message is written.
  // strictRequired is off: "text or state" is written as anyOf of two `required` beside the properties.
  const ajv = new Ajv2020({ allErrors: false, useDefaults: true, coerceTypes: false, verbose: true, strict: true, strictRequired: false });
  addFormats.default(ajv);
  // The API's UUID: 8-4-4-4-12 hex digits in any case, without ajv-formats' optional "urn:uuid:".
  ajv.addFormat('uuid', UUID);
  ajv.addKeyword({ keyword: EXPECTS, schemaType: 'string' });
  ajv.addKeyword({ keyword: TRIMMED_LENGTH, schemaType: 'object' });
  return ajv;
}

const ajv = createAjv();

interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  format?: string;
  [keyword: string]: unknown;
}

const INTEGER = /^-?\d{1,20}$/;

/** fromText turns the text of one query, path or header value into what its schema asks for, when it can. */
function fromText(value: unknown, schema: JsonSchema | undefined): unknown {
  if (typeof value !== 'string' || schema === undefined) return value;
  const types = ([] as string[]).concat(schema.type ?? []);
  if ((types.includes('integer') || types.includes('number')) && INTEGER.test(value)) return Number(value);
  if (types.includes('boolean') && (value === 'true' || value === 'false')) return value === 'true';
  return value;
}

/** lengthOf counts characters (code points), as `minLength` and `maxLength` do. */
function lengthOf(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

/** asLengthErrors reports a refusal by an `x-trimmed-length` pattern as the length of the trimmed text. */
function asLengthErrors(errors: ErrorObject[] | null | undefined): ErrorObject[] | null | undefined {
  return errors?.map((error) => {
    const bounds = (error.parentSchema as Record<string, unknown> | undefined)?.[TRIMMED_LENGTH] as { min: number; max: number } | undefined;
    if (error.keyword !== 'pattern' || bounds === undefined || typeof error.data !== 'string') return error;
    const trimmed = error.data.trim();
    const length = lengthOf(trimmed);
    if (length < bounds.min) return { ...error, keyword: 'minLength', params: { limit: bounds.min }, data: trimmed };
    if (length > bounds.max) return { ...error, keyword: 'maxLength', params: { limit: bounds.max }, data: trimmed };
    return error;
  });
}

export interface RequestValidator {
  (data: unknown): boolean | { value: unknown };
  errors?: ErrorObject[] | null;
}

/**
 * compileRequestSchema compiles the schema of one part of a request. The result is a Fastify
 * validator (pass it to `setValidatorCompiler`), also usable alone: it answers false and sets `errors`
 * when the data does not validate, else true or `{ value }` with the data as the schema reads it.
 */
export function compileRequestSchema({ schema, httpPart }: { schema: FastifySchema | object; httpPart?: string }): RequestValidator {
  const json = schema as JsonSchema;
  // A binary body (an uploaded image) is a Buffer; what it holds is checked by its content, in domain/.
  if (httpPart === 'body' && json.type === 'string' && json.format === 'binary') {
    const binary: RequestValidator = (data) => {
      if (Buffer.isBuffer(data)) return true;
      binary.errors = [{ keyword: 'type', instancePath: '', schemaPath: '#/type', params: { type: 'string' }, data, schema: json, parentSchema: json }];
      return false;
    };
    return binary;
  }
  const compile = compileLater((): ValidateFunction => ajv.compile(json));
  const properties = json.properties;
  // Text needs reading only where a property is not text (the by-UUID path, a hot route, is not).
  const typed = Object.values(properties ?? {}).some((property) => ([] as string[]).concat(property.type ?? []).some((type) => type !== 'string'));
  if (httpPart === 'body' || properties === undefined || !typed) {
    const check: RequestValidator = (data) => {
      const validate = compile();
      const valid = validate(data);
      check.errors = asLengthErrors(validate.errors);
      return valid;
    };
    return check;
  }
  const check: RequestValidator = (data) => {
    const validate = compile();
    const given = (data ?? {}) as Record<string, unknown>;
    const read: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(given)) read[name] = fromText(value, properties[name]);
    const valid = validate(read);
    check.errors = asLengthErrors(validate.errors);
    return valid ? { value: read } : false;
  };
  return check;
}
