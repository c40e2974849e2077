import { parse } from 'csv-parse/sync';
import { stringify } from 'csv-stringify/sync';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CSV_COLUMNS, csvRecords, neutraliseFormula, restoreFormula } from '../../src/formats/csv.ts';
import { csvLines, exportPage, pagePick, storedLineCursor } from '../../src/formats/export.ts';

describe('CSV formula neutralisation', () => {
  const tricky = ['=1+1', '+49 123', '-1 point', '@everyone', "'quoted", "''twice", '=', 'plain', "it's", ''];

  it('prefixes fields a spreadsheet would run, and restores them exactly', () => {
    expect(neutraliseFormula('=SUM(A1)')).toBe("'=SUM(A1)");
    expect(neutraliseFormula('@x')).toBe("'@x");
    expect(neutraliseFormula('plain')).toBe('plain');
    for (const text of tricky) expect(restoreFormula(neutraliseFormula(text))).toBe(text);
  });
});

describe('csvRecords', () => {
  it('writes RFC 4180 with CRLF and reads back exactly with a real parser', () => {
    const entries = [
      { uuid: 'a', nonsense: 'comma, "quotes" and\nnew line', timestamp: 1 },
      { uuid: 'b', nonsense: 'cat', original_nonsense: '$ANIMAL$', timestamp: 2 },
      { uuid: 'c', nonsense: '=cmd|calc', timestamp: 3 },
      { uuid: 'd', nonsense: 'carriage\rreturn 🦆', timestamp: 4 },
    ];
    const text = csvRecords(entries, true);
    expect(text.startsWith('uuid,nonsense,original_nonsense,timestamp\r\n')).toBe(true);
    expect(text.endsWith('\r\n')).toBe(true);
    expect(text).toContain('"comma, ""quotes"" and\nnew line"');
    const rows = parse(text, { columns: true }) as Record<string, string>[];
    expect(rows.map((r) => restoreFormula(r.nonsense!))).toEqual(entries.map((e) => e.nonsense));
    expect(rows.map((r) => r.original_nonsense)).toEqual(['', '$ANIMAL$', '', '']);
    expect(rows[2]!.nonsense).toBe("'=cmd|calc");
  });

  it('writes only the header for no entries', () => {
    expect(csvRecords([], true)).toBe('uuid,nonsense,original_nonsense,timestamp\r\n');
    expect(csvRecords([], false)).toBe('');
  });

  it('writes the bytes csv-stringify writes (RFC 4180, any line break quoted), for any text', () => {
    const reference = (entries: { uuid: string; nonsense: string; original_nonsense?: string; timestamp: number }[]) =>
      stringify(
        [[...CSV_COLUMNS], ...entries.map((e) => [e.uuid, neutraliseFormula(e.nonsense), e.original_nonsense === undefined ? '' : neutraliseFormula(e.original_nonsense), String(e.timestamp)])],
        { record_delimiter: 'windows', quoted_match: /[\r\n]/ },
      );
    const text = fc.oneof(fc.string({ maxLength: 30 }), fc.constantFrom('', ' ', '"', '""', ',', '\r', '\n', '\r\n', '=1', "'", ' lead', 'trail ', 'é漢🦆', '\t'));
    const entry = fc.record({ uuid: fc.uuid(), nonsense: text, original_nonsense: fc.option(text, { nil: undefined }), timestamp: fc.integer({ min: 0, max: 4_000_000_000 }) });
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 8 }), (entries) => {
        expect(csvRecords(entries, true)).toBe(reference(entries));
      }),
      { numRuns: 500, seed: 4180 },
    );
  });
});

describe('csvLines (a CSV page from the lines SQLite makes in the export worker)', () => {
  const variables = new Map([['$ANIMAL$', ['goose', 'newt']]]);
  const line = (e: { uuid: string; text: string; timestamp: number }) => `${e.uuid},${e.text},,${e.timestamp}\r\n`;

  it('writes the page exportPage writes from the same entries, for any text and timestamp', () => {
    const text = fc.oneof(
      fc.string({ minLength: 1, maxLength: 30 }),
      fc.constantFrom('"', ',', ',,1\r\n', '\r', '\n', '=1', '+1', '-1', '@x', "'", '$', '$ANIMAL$', 'a $ANIMAL$ b', 'é漢🦆', 'plain words', '12'),
    );
    const entry = fc.record({ uuid: fc.uuid(), text, timestamp: fc.oneof(fc.integer({ min: 0, max: 4_000_000_000 }), fc.constant(999_999_999_999_999)) });
    fc.assert(
      fc.property(fc.array(entry, { minLength: 1, maxLength: 8 }), fc.boolean(), (entries, first) => {
        expect(csvLines(entries.map(line), variables, first, pagePick('s', 3))).toBe(exportPage('csv', entries, variables, first, pagePick('s', 3)));
        const last = entries.at(-1)!;
        expect(storedLineCursor(line(last))).toEqual({ uuid: last.uuid, timestamp: last.timestamp });
      }),
      { numRuns: 500, seed: 4180 },
    );
  });

  it('refuses a line that is not uuid,text,,timestamp rather than write a wrong record', () => {
    expect(() => csvLines(['not-a-uuid,"x",,1\r\n'], variables, false, pagePick('s', 0))).toThrow(/not uuid,text,,timestamp/);
    expect(() => storedLineCursor('00000000-0000-4000-8000-000000000001,x,1\r\n')).toThrow(/not uuid,text,,timestamp/);
  });
});
