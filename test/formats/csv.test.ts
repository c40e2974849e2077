import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { csvRecords, neutraliseFormula, restoreFormula } from '../../src/formats/csv.ts';

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
});
