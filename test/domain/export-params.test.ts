import { describe, expect, it } from 'vitest';
import { parseExportParams } from '../../src/domain/export-params.ts';

describe('parseExportParams', () => {
  it('defaults to CSV without filters', () => {
    expect(parseExportParams({})).toEqual({ ok: true, value: { format: 'csv', filter: {} } });
    expect(parseExportParams({ q: '  ' })).toEqual({ ok: true, value: { format: 'csv', filter: {} } });
  });

  it('combines every filter; txt asks for single-line entries', () => {
    expect(parseExportParams({ q: ' Cat ', format: 'txt', after: '10', before: '20' })).toEqual({
      ok: true,
      value: { format: 'txt', filter: { q: 'Cat', after: 10, before: 20, singleLine: true } },
    });
  });

  it.each([
    [{ format: 'xml' }, 'format', /csv, json, txt/],
    [{ format: 'CSV' }, 'format', /csv, json, txt/],
    [{ after: 'abc' }, 'after', /non-negative integer/],
    [{ after: '1.5' }, 'after', /non-negative integer/],
    [{ before: '-3' }, 'before', /non-negative integer/],
    [{ before: '' }, 'before', /non-negative integer/],
    [{ q: 'x'.repeat(201) }, 'q', /at most 200/],
    [{ q: ['a', 'b'] }, 'q', /more than once/],
  ])('rejects %j naming %s', (raw, parameter, detail) => {
    const result = parseExportParams(raw);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.parameter).toBe(parameter);
      expect(result.detail).toMatch(detail);
    }
  });

  it('counts q in characters, not UTF-16 units', () => {
    expect(parseExportParams({ q: '🦆'.repeat(200) }).ok).toBe(true);
  });
});
