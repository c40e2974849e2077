/**
 * Checking what readers and moderators send: reports, entries, variables. Each parser returns the
 * clean value or a message that names the field and says what it accepts.
 */
import { REPORT_REASONS, type ReportReason } from '../storage/reports.ts';
import { checkEntryText } from './text.ts';
import { parseUuid } from './uuid.ts';
import { isClientVariable, isVariableName } from './variables.ts';

export type Parsed<T> = { ok: true; value: T } | { ok: false; detail: string };

export const MAX_DETAILS_LENGTH = 1000;
export const MAX_DESCRIPTION_LENGTH = 500;
export const MAX_VARIABLE_VALUES = 500;
export const MAX_VALUE_LENGTH = 200;
export const EMOJI_NAME = /^[a-z0-9_]{2,32}$/;

const CONTROL = /[\u0000-\u001F\u007F-\u009F]/;
const CONTROL_EXCEPT_BREAKS = /[\u0000-\u0009\u000B\u000C\u000E-\u001F\u007F-\u009F]/;

function length(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

function isObject(body: unknown): body is Record<string, unknown> {
  return typeof body === 'object' && body !== null && !Array.isArray(body);
}

const fail = (detail: string) => ({ ok: false as const, detail });

/** parseReport checks the body of POST /api/v1/nonsense/report; unknown fields are ignored. */
export function parseReport(body: unknown): Parsed<{ entryUuid: string; reason: ReportReason; details: string | null }> {
  if (!isObject(body)) return fail('The body must be a JSON object with "entryUuid", "reason" and optionally "details".');
  if (body.entryUuid === undefined) return fail('The field "entryUuid" is required: the UUID of the entry you report.');
  const entryUuid = typeof body.entryUuid === 'string' ? parseUuid(body.entryUuid) : null;
  if (entryUuid === null) return fail('The field "entryUuid" must be a UUID such as 6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11.');
  const reasons = REPORT_REASONS.join(', ');
  if (body.reason === undefined) return fail(`The field "reason" is required; it must be one of: ${reasons}.`);
  if (typeof body.reason !== 'string' || !(REPORT_REASONS as readonly string[]).includes(body.reason)) {
    return fail(`The field "reason" must be one of: ${reasons}.`);
  }
  let details: string | null = null;
  if (body.details !== undefined && body.details !== null) {
    if (typeof body.details !== 'string') return fail('The field "details" must be a string.');
    const trimmed = body.details.trim();
    if (length(trimmed) > MAX_DETAILS_LENGTH) return fail(`The field "details" has ${length(trimmed)} characters; at most ${MAX_DETAILS_LENGTH} are allowed.`);
    if (CONTROL_EXCEPT_BREAKS.test(trimmed) || !trimmed.isWellFormed()) return fail('The field "details" contains control characters; only line breaks are allowed.');
    details = trimmed === '' ? null : trimmed;
  }
  return { ok: true, value: { entryUuid, reason: body.reason as ReportReason, details } };
}

function parseText(value: unknown): Parsed<string> {
  if (typeof value !== 'string') return fail('The field "text" must be a string.');
  const checked = checkEntryText(value);
  return checked.ok ? { ok: true, value: checked.text } : fail(`The field "text" is not acceptable: ${checked.reason}.`);
}

/** parseNewEntry checks the body of POST /api/v1/admin/nonsense. */
export function parseNewEntry(body: unknown, now: number): Parsed<{ text: string; timestamp: number }> {
  if (!isObject(body)) return fail('The body must be a JSON object with "text" and optionally "timestamp".');
  if (body.text === undefined) return fail('The field "text" is required.');
  const text = parseText(body.text);
  if (!text.ok) return text;
  let timestamp = now;
  if (body.timestamp !== undefined) {
    if (!Number.isSafeInteger(body.timestamp) || (body.timestamp as number) < 0) {
      return fail('The field "timestamp" must be a non-negative integer (Unix seconds).');
    }
    timestamp = body.timestamp as number;
  }
  return { ok: true, value: { text: text.value, timestamp } };
}

/** parseEntryChange checks the body of PATCH /api/v1/admin/nonsense/<uuid>. */
export function parseEntryChange(body: unknown): Parsed<{ text?: string; state?: 'visible' | 'hidden' }> {
  if (!isObject(body)) return fail('The body must be a JSON object with "text" and/or "state".');
  const change: { text?: string; state?: 'visible' | 'hidden' } = {};
  if (body.text !== undefined) {
    const text = parseText(body.text);
    if (!text.ok) return text;
    change.text = text.value;
  }
  if (body.state !== undefined) {
    if (body.state !== 'visible' && body.state !== 'hidden') return fail('The field "state" must be "visible" or "hidden".');
    change.state = body.state;
  }
  if (change.text === undefined && change.state === undefined) return fail('Give "text", "state" or both.');
  return { ok: true, value: change };
}

/** parseVariableName checks a server variable's name from the path. */
export function parseVariableName(name: string): Parsed<string> {
  if (!isVariableName(name)) return fail(`"${name.slice(0, 70)}" is not a variable name: use $NAME$ (A-Z, 0-9, _) or \${name} (a-z, 0-9, _).`);
  if (isClientVariable(name)) return fail(`${name} is a client-side variable; clients replace it, so it cannot have server values.`);
  return { ok: true, value: name };
}

/** parseVariableBody checks the body of PUT /api/v1/admin/variables/<name>. */
export function parseVariableBody(body: unknown): Parsed<{ description: string; values: string[] }> {
  if (!isObject(body)) return fail('The body must be a JSON object with "description" and "values".');
  if (typeof body.description !== 'string') return fail('The field "description" is required and must be a string.');
  const description = body.description.trim();
  if (length(description) > MAX_DESCRIPTION_LENGTH || CONTROL.test(description)) {
    return fail(`The field "description" must be a single line of at most ${MAX_DESCRIPTION_LENGTH} characters.`);
  }
  if (!Array.isArray(body.values) || body.values.length === 0 || body.values.length > MAX_VARIABLE_VALUES) {
    return fail(`The field "values" must be a list of 1 to ${MAX_VARIABLE_VALUES} strings.`);
  }
  const values: string[] = [];
  for (const [index, value] of body.values.entries()) {
    if (typeof value !== 'string') return fail(`values[${index}] must be a string.`);
    const trimmed = value.trim();
    if (trimmed === '' || length(trimmed) > MAX_VALUE_LENGTH || CONTROL.test(trimmed) || !trimmed.isWellFormed()) {
      return fail(`values[${index}] must be a single line of 1 to ${MAX_VALUE_LENGTH} characters.`);
    }
    values.push(trimmed);
  }
  return { ok: true, value: { description, values } };
}
