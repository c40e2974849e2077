/**
 * The export's parameter rules, as both the HTTP export and `nonsense export` apply them: the
 * `ExportQuery` schema with the service's validator, then the search term's own rules.
 */
import { describe, expect, it } from 'vitest';
import { exportSelection, type ExportParams } from '../../src/domain/export-params.ts';
import { describeValidation } from '../../src/schemas/validation-wording.ts';
import { ExportQuery } from '../../src/schemas/api.ts';
import { compileRequestSchema } from '../../src/schemas/validator.ts';

const validate = compileRequestSchema({ schema: ExportQuery, httpPart: 'querystring' });

function check(raw: Record<string, unknown>) {
  const checked = validate(raw);
  if (checked === false) {
    const { detail, name } = describeValidation(validate.errors ?? [], 'querystring');
    return { ok: false as const, parameter: name, detail };
  }
  return exportSelection((typeof checked === 'object' ? checked.value : raw) as ExportParams);
}

describe('the export parameters', () => {
  it('defaults to CSV without filters', () => {
    expect(check({})).toEqual({ ok: true, value: { format: 'csv', filter: {} } });
    expect(check({ q: '' })).toEqual({ ok: true, value: { format: 'csv', filter: {} } });
    // The term is not trimmed: spaces are part of the substring asked for.
    expect(check({ q: '  ' })).toEqual({ ok: true, value: { format: 'csv', filter: { q: '  ' } } });
  });

  it('combines every filter; txt asks for single-line entries', () => {
    expect(check({ q: ' Cat ', format: 'txt', after: '10', before: '20' })).toEqual({
      ok: true,
      value: { format: 'txt', filter: { q: ' Cat ', after: 10, before: 20, singleLine: true } },
    });
  });

  it.each([
    [{ format: 'xml' }, 'format', 'The parameter "format" must be one of: csv, json, txt; got "xml".'],
    [{ format: 'CSV' }, 'format', /csv, json, txt/],
    [{ after: 'abc' }, 'after', /^The parameter "after" must be a non-negative integer Unix timestamp in seconds .*; got "abc"\.$/],
    [{ after: '1.5' }, 'after', /non-negative integer/],
    [{ after: '1e3' }, 'after', /non-negative integer/],
    [{ after: '0x10' }, 'after', /non-negative integer/],
    [{ after: ' 12' }, 'after', /non-negative integer/],
    [{ before: '-3' }, 'before', /non-negative integer.*; got -3\.$/],
    [{ before: '' }, 'before', /non-negative integer/],
    [{ before: '1000000000000000' }, 'before', /at most 15 digits/],
    [{ q: 'x'.repeat(201) }, 'q', 'The parameter "q" has 201 characters; at most 200 are allowed.'],
    [{ q: ['a', 'b'] }, 'q', 'The parameter "q" is given more than once; give it once.'],
    [{ format: ['csv', 'json'] }, 'format', /more than once/],
    [{ after: ['1', '2'] }, 'after', /more than once/],
    [{ q: 'a\u0000' }, 'q', /control character U\+0000/],
  ])('rejects %j naming %s', (raw, parameter, detail) => {
    const result = check(raw);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.parameter).toBe(parameter);
      if (typeof detail === 'string') expect(result.detail).toBe(detail);
      else expect(result.detail).toMatch(detail);
    }
  });

  it('counts q in characters, not UTF-16 units', () => {
    expect(check({ q: '🦆'.repeat(200) }).ok).toBe(true);
  });

  it('takes the largest 15-digit timestamp', () => {
    expect(check({ after: '999999999999999' })).toMatchObject({ ok: true, value: { filter: { after: 999_999_999_999_999 } } });
  });
});
