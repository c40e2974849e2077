/**
 * The export's parameters (`q`, `format`, `after`, `before`), parsed the same way for the HTTP export
 * and `nonsense export`, with messages that name the parameter and what it accepts.
 */
import type { EntryFilter } from '../storage/entry-query.ts';

export const EXPORT_FORMATS = ['csv', 'json', 'txt'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export const MAX_QUERY_LENGTH = 200;

export interface ExportParams {
  format: ExportFormat;
  filter: EntryFilter;
}

export type ParseResult = { ok: true; value: ExportParams } | { ok: false; parameter: string; detail: string };

type Raw = Record<string, unknown>;

function single(raw: Raw, name: string): string | undefined | { error: string } {
  const value = raw[name];
  if (value === undefined) return undefined;
  if (Array.isArray(value)) return { error: `The parameter "${name}" is given more than once; give it once.` };
  return String(value);
}

function timestamp(raw: Raw, name: 'after' | 'before'): number | undefined | { error: string } {
  const value = single(raw, name);
  if (value === undefined || typeof value === 'object') return value;
  if (!/^\d{1,15}$/.test(value)) {
    return { error: `The parameter "${name}" must be a non-negative integer Unix timestamp in seconds, such as 1700000000; got "${value.slice(0, 40)}".` };
  }
  return Number(value);
}

/** parseExportParams validates the raw parameters (strings, as from a query string or the command line). */
export function parseExportParams(raw: Raw): ParseResult {
  const format = single(raw, 'format') ?? 'csv';
  if (typeof format === 'object') return { ok: false, parameter: 'format', detail: format.error };
  if (!(EXPORT_FORMATS as readonly string[]).includes(format)) {
    return { ok: false, parameter: 'format', detail: `The parameter "format" must be one of csv, json, txt; got "${format.slice(0, 40)}".` };
  }
  const q = single(raw, 'q') ?? '';
  if (typeof q === 'object') return { ok: false, parameter: 'q', detail: q.error };
  if ([...q].length > MAX_QUERY_LENGTH) {
    return { ok: false, parameter: 'q', detail: `The parameter "q" is ${[...q].length} characters long; at most ${MAX_QUERY_LENGTH} are allowed.` };
  }
  const after = timestamp(raw, 'after');
  if (typeof after === 'object') return { ok: false, parameter: 'after', detail: after.error };
  const before = timestamp(raw, 'before');
  if (typeof before === 'object') return { ok: false, parameter: 'before', detail: before.error };
  const filter: EntryFilter = {};
  if (q.trim() !== '') filter.q = q.trim();
  if (after !== undefined) filter.after = after;
  if (before !== undefined) filter.before = before;
  if (format === 'txt') filter.singleLine = true;
  return { ok: true, value: { format: format as ExportFormat, filter } };
}
