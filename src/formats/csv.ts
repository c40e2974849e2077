/**
 * CSV as the export writes it (RFC 4180: comma, quotes doubled, CRLF, UTF-8 without BOM) and as the
 * import reads it back. Spreadsheet formula injection is neutralised by prefixing a single quote to
 * any field that starts with `=`, `+`, `-`, `@`, tab or carriage return; a field that itself starts
 * with a quote gets one too, so that the import, which removes exactly one such prefix, restores
 * every text exactly.
 */
import { stringify } from 'csv-stringify/sync';
import type { DeliveredEntry } from './entry.ts';

export const CSV_COLUMNS = ['uuid', 'nonsense', 'original_nonsense', 'timestamp'] as const;

const FORMULA_START = /^[=+\-@\t\r']/;

/** neutraliseFormula prefixes `'` to a field a spreadsheet would run as a formula. */
export function neutraliseFormula(field: string): string {
  return FORMULA_START.test(field) ? `'${field}` : field;
}

/** restoreFormula undoes neutraliseFormula. */
export function restoreFormula(field: string): string {
  return field.length > 1 && field[0] === "'" && FORMULA_START.test(field.slice(1)) ? field.slice(1) : field;
}

/** csvRecords renders entries as CSV records, with the header line first when `header` is set. */
export function csvRecords(entries: readonly DeliveredEntry[], header: boolean): string {
  const rows = entries.map((e) => [
    e.uuid,
    neutraliseFormula(e.nonsense),
    e.original_nonsense === undefined ? '' : neutraliseFormula(e.original_nonsense),
    String(e.timestamp),
  ]);
  if (header) rows.unshift([...CSV_COLUMNS]);
  // csv-stringify only quotes line breaks that match its record delimiter; RFC 4180 wants any quoted.
  return rows.length === 0 ? '' : stringify(rows, { record_delimiter: 'windows', quoted_match: /[\r\n]/ });
}
