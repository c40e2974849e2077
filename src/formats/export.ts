/**
 * The export file formats: CSV, JSON and TXT, written page by page as the entries are read, so the
 * memory used does not depend on the size of the database.
 */
import type { ExportFormat } from '../domain/export-params.ts';
import { seededPick, substitute, type PickIndex, type ServerVariables } from '../domain/variables.ts';
import type { EntryRecord } from '../domain/records.ts';
import { CSV_HEADER, csvRecord } from './csv.ts';
import { deliverEntry } from '../domain/delivered-entry.ts';

/**
 * Entries read per page of an export. Each page is one query and one chunk of the file, and between
 * pages other requests get the event loop: 1,000 keeps the per-query cost small against the rows
 * (with 500 the export took a third more CPU; 2,000 saved little more) while a page takes only about
 * 2 ms.
 */
export const EXPORT_PAGE_SIZE = 1000;

/**
 * An export's first page: small, so that the first byte comes soon whatever the filter. A term
 * matched by testing rows in order (EntryQuery.textPlan) meets a few dozen matches long before a
 * full page of them; the client has the start of its file meanwhile.
 */
export const EXPORT_FIRST_PAGE_SIZE = 50;

/**
 * exportPageSize is the size of an export's page `page` (0 for the first): EXPORT_FIRST_PAGE_SIZE,
 * then each page twice the one before, up to EXPORT_PAGE_SIZE. The read workers and the walk on the
 * event loop (EntryQuery.pages) both follow it, so that either cuts a file at the same entries and
 * draws its server variables the same way (pagePick).
 */
export function exportPageSize(page: number): number {
  return Math.min(EXPORT_PAGE_SIZE, EXPORT_FIRST_PAGE_SIZE * 2 ** Math.min(page, 16));
}

export const EXPORT_CONTENT_TYPES: Readonly<Record<ExportFormat, string>> = {
  csv: 'text/csv; charset=utf-8',
  json: 'application/json; charset=utf-8',
  txt: 'text/plain; charset=utf-8',
};

/**
 * readAhead starts an iteration and waits for its first item, so that a failure there (the database
 * away, say) becomes a proper error answer before any byte of a file is sent. A failure after that
 * aborts the transfer, which a client sees as a broken download, never as a complete short file.
 */
export async function readAhead<T>(iterable: AsyncIterable<T>): Promise<AsyncIterable<T>> {
  const iterator = iterable[Symbol.asyncIterator]();
  const first = await iterator.next();
  return {
    async *[Symbol.asyncIterator]() {
      try {
        if (first.done) return;
        yield first.value;
        for (let next = await iterator.next(); !next.done; next = await iterator.next()) yield next.value;
      } finally {
        await iterator.return?.();
      }
    },
  };
}

/**
 * exportSeed draws the seed of one export's server-variable picks. Page `n` of the export (counting
 * the pages that hold entries: a page may come back empty, EntryQuery.listPage) picks with
 * `pagePick(seed, n)`, wherever it is written (on the event loop, or in an export worker,
 * services/read-workers), so an export is one reproducible draw: the same seed gives the same file on
 * either engine and on either path.
 */
export function exportSeed(): string {
  return Math.floor(Math.random() * 2 ** 32).toString(36);
}

/** pagePick is the pick of page `page` (0 for the first that holds entries) of the export drawn as `seed`. */
export function pagePick(seed: string, page: number): PickIndex {
  return seededPick(`${seed}/${page}`);
}

/** exportHead is what an export file starts with, before its first page. */
export function exportHead(format: ExportFormat): string {
  return format === 'json' ? '[' : '';
}

/**
 * exportPage is one page of entries as a piece of the export file; `first` tells whether it is the
 * file's first page (the CSV header, JSON's separators). TXT expects single-line entries only (the
 * query filters them).
 */
export function exportPage(format: ExportFormat, page: readonly EntryRecord[], variables: ServerVariables, first: boolean, pick: PickIndex): string {
  if (format === 'csv') {
    // Straight from the stored entry to the record: no delivered object per entry.
    let text = first ? CSV_HEADER : '';
    for (const entry of page) text += csvLine(entry.uuid, entry.text, entry.timestamp, variables, pick);
    return text;
  }
  const delivered = page.map((entry) => deliverEntry(entry, variables, pick));
  if (format === 'json') return (first ? '\n' : ',\n') + delivered.map((e) => JSON.stringify(e)).join(',\n');
  return delivered.map((e) => `${e.nonsense}\n`).join('');
}

/** A stored entry as the export's query reads it in raw mode: uuid, raw text, timestamp. */
export type ExportRow = readonly [uuid: string, text: string, timestamp: number];

/**
 * A stored line is an entry as the export worker reads it for a CSV file: one string a row, made by
 * SQLite as `uuid,text,,created_at` and CRLF (services/read-workers/worker.ts). One string a row
 * instead of an array of three halves the worker's walk: the driver's arrays and values were most
 * of it.
 */
export type StoredLine = string;

/**
 * A stored line that is already its CSV record: after the uuid (stored canonical by every path that
 * writes one: 36 characters, no comma or quote) and its comma, a text that needs no quotes, has no
 * `$` (so no variable) and does not start like a formula, and a whole timestamp that a JavaScript
 * number prints the same (under 10^15). Tested from the text on (sticky, from TEXT_START): the whole
 * line, the uuid's characters included, took the regular expression three times as long. Any other
 * line is taken apart and written as csvLine does.
 */
const TEXT_AS_STORED = /[^",\r\n$=+\-@\t'][^",\r\n$]*,,[0-9]{1,15}\r\n$/y;
const TEXT_START = 37;

/** asStored tells whether a stored line is already its CSV record. */
function asStored(line: StoredLine): boolean {
  if (line.charCodeAt(TEXT_START - 1) !== 44 /* , */) return false;
  TEXT_AS_STORED.lastIndex = TEXT_START;
  return TEXT_AS_STORED.test(line);
}

/**
 * csvLines is exportPage for a CSV page read as stored lines: most are written as they are, the
 * others through csvLine, so the file is the same as from entries.
 */
export function csvLines(lines: readonly StoredLine[], variables: ServerVariables, first: boolean, pick: PickIndex): string {
  let text = first ? CSV_HEADER : '';
  for (const line of lines) {
    if (asStored(line)) text += line;
    else {
      const { uuid, raw, timestamp } = storedLineParts(line);
      text += csvLine(uuid, raw, timestamp, variables, pick);
    }
  }
  return text;
}

/** storedLineCursor is where the page after the one ending with `line` starts. */
export function storedLineCursor(line: StoredLine): { uuid: string; timestamp: number } {
  const { uuid, timestamp } = storedLineParts(line);
  return { uuid, timestamp };
}

/**
 * storedLineParts takes a stored line apart: the uuid is before its first comma (a uuid, stored
 * canonical by every path that writes one, has 36 characters and no comma), the timestamp after its
 * last (digits), the text between them, whatever it holds.
 */
function storedLineParts(line: StoredLine): { uuid: string; raw: string; timestamp: number } {
  const end = line.lastIndexOf(',');
  if (line.indexOf(',') !== TEXT_START - 1 || line[end - 1] !== ',' || !line.endsWith('\r\n')) throw new Error(`An export line is not uuid,text,,timestamp: ${JSON.stringify(line.slice(0, 60))}`);
  return { uuid: line.slice(0, TEXT_START - 1), raw: line.slice(TEXT_START, end - 1), timestamp: Number(line.slice(end + 1, -2)) };
}

/** csvLine is a stored entry as a CSV record, its server variables drawn with `pick`. */
function csvLine(uuid: string, raw: string, timestamp: number, variables: ServerVariables, pick: PickIndex): string {
  // Most texts have no `$`, so no variable: nothing to substitute.
  if (raw.indexOf('$') === -1) return csvRecord(uuid, raw, undefined, timestamp);
  const delivered = substitute(raw, variables, pick);
  return csvRecord(uuid, delivered.text, delivered.hasVariables ? raw : undefined, timestamp);
}

/** exportTail is what an export file ends with; `empty` when it had no page. */
export function exportTail(format: ExportFormat, empty: boolean): string {
  if (format === 'csv') return empty ? CSV_HEADER : '';
  if (format === 'json') return empty ? ']' : '\n]\n';
  return '';
}

/** serializeExport turns pages of stored entries into chunks of the export file. */
export async function* serializeExport(
  format: ExportFormat,
  pages: AsyncIterable<readonly EntryRecord[]>,
  variables: ServerVariables,
  seed: string = exportSeed(),
): AsyncGenerator<string> {
  let n = 0;
  const head = exportHead(format);
  if (head !== '') yield head;
  for await (const page of pages) {
    yield exportPage(format, page, variables, n === 0, pagePick(seed, n));
    n++;
  }
  const tail = exportTail(format, n === 0);
  if (tail !== '') yield tail;
}
