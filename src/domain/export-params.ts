/**
 * The export's parameters (`q`, `format`, `after`, `before`) once their schema has accepted them
 * (`ExportQuery` in schemas/api.ts, checked the same way for the HTTP export and `nonsense export`):
 * the search term's own rules, and the selection they make.
 */
import type { EntryFilter } from './entry-selection.ts';
import { parseSearchText } from './search-text.ts';

export const EXPORT_FORMATS = ['csv', 'json', 'txt'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** The parameters as the schema delivers them: types checked, `format` defaulted. */
export interface ExportParams {
  q?: string;
  format?: ExportFormat;
  after?: number;
  before?: number;
}

export interface ExportSelection {
  format: ExportFormat;
  filter: EntryFilter;
}

export type SelectionResult = { ok: true; value: ExportSelection } | { ok: false; parameter: string; detail: string };

/** exportSelection turns checked parameters into a format and a filter; the term may still be refused. */
export function exportSelection({ q = '', format = 'csv', after, before }: ExportParams): SelectionResult {
  const term = parseSearchText(q);
  if (!term.ok) return { ok: false, parameter: 'q', detail: term.detail };
  const filter: EntryFilter = {};
  if (q !== '') filter.q = q;
  if (after !== undefined) filter.after = after;
  if (before !== undefined) filter.before = before;
  if (format === 'txt') filter.singleLine = true;
  return { ok: true, value: { format, filter } };
}
