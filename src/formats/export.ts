/**
 * The export file formats: CSV, JSON and TXT, written page by page as the entries are read, so the
 * memory used does not depend on the size of the database.
 */
import type { ExportFormat } from '../domain/export-params.ts';
import { mathRandomPick, type PickIndex, type ServerVariables } from '../domain/variables.ts';
import type { EntryRecord } from '../storage/entries.ts';
import { csvRecords } from './csv.ts';
import { deliverEntry } from './entry.ts';

export const EXPORT_CONTENT_TYPES: Readonly<Record<ExportFormat, string>> = {
  csv: 'text/csv; charset=utf-8',
  json: 'application/json; charset=utf-8',
  txt: 'text/plain; charset=utf-8',
};

/**
 * serializeExport turns pages of stored entries into chunks of the export file. TXT expects pages
 * of single-line entries only (the query filters them).
 */
export async function* serializeExport(
  format: ExportFormat,
  pages: AsyncIterable<readonly EntryRecord[]>,
  variables: ServerVariables,
  pick: PickIndex = mathRandomPick,
): AsyncGenerator<string> {
  let first = true;
  if (format === 'json') yield '[';
  for await (const page of pages) {
    const delivered = page.map((entry) => deliverEntry(entry, variables, pick));
    if (format === 'csv') {
      yield csvRecords(delivered, first);
    } else if (format === 'json') {
      yield (first ? '\n' : ',\n') + delivered.map((e) => JSON.stringify(e)).join(',\n');
    } else {
      yield delivered.map((e) => `${e.nonsense}\n`).join('');
    }
    first = false;
  }
  if (format === 'csv' && first) yield csvRecords([], true);
  if (format === 'json') yield first ? ']' : '\n]\n';
}
