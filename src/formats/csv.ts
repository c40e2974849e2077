/**
 * CSV as the export writes it (RFC 4180: comma, quotes doubled, CRLF, UTF-8 without BOM) and as the
 * import reads it back. Spreadsheet formula injection is neutralised by prefixing a single quote to
 * any field that starts with `=`, `+`, `-`, `@`, tab or carriage return; a field that itself starts
 * with a quote gets one too, so that the import, which removes exactly one such prefix, restores
 * every text exactly.
 */
import type { DeliveredEntry } from '../domain/delivered-entry.ts';

export const CSV_COLUMNS = ['uuid', 'nonsense', 'original_nonsense', 'timestamp'] as const;

/** The header record. */
export const CSV_HEADER = `${CSV_COLUMNS.join(',')}\r\n`;

/** A field that must be quoted: it holds the separator, a quote or a line break. */
const NEEDS_QUOTES = /[",\r\n]/;

const FORMULA_START = /^[=+\-@\t\r']/;

/** neutraliseFormula prefixes `'` to a field a spreadsheet would run as a formula. */
export function neutraliseFormula(field: string): string {
  return FORMULA_START.test(field) ? `'${field}` : field;
}

/** restoreFormula undoes neutraliseFormula. */
export function restoreFormula(field: string): string {
  return field.length > 1 && field[0] === "'" && FORMULA_START.test(field.slice(1)) ? field.slice(1) : field;
}

/** csvField is one field of a record: quoted, with its quotes doubled, when it must be (RFC 4180). */
export function csvField(value: string): string {
  return NEEDS_QUOTES.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

/**
 * csvRecord is one entry as a CSV record, CRLF included: its texts formula-safe, `original` empty when
 * the raw text has no variable. Written by hand (the export writes millions of them): csv-stringify,
 * which test/formats/csv.test.ts keeps as the reference, cost five times more.
 */
export function csvRecord(uuid: string, nonsense: string, original: string | undefined, timestamp: number): string {
  return `${csvField(uuid)},${csvField(neutraliseFormula(nonsense))},${original === undefined ? '' : csvField(neutraliseFormula(original))},${timestamp}\r\n`;
}

/** csvRecords renders entries as CSV records, with the header line first when `header` is set. */
export function csvRecords(entries: readonly DeliveredEntry[], header: boolean): string {
  let text = header ? CSV_HEADER : '';
  for (const e of entries) text += csvRecord(e.uuid, e.nonsense, e.original_nonsense, e.timestamp);
  return text;
}
