import { describe, expect, it } from 'vitest';
import { checkEntryText, isMultiline, textKey } from '../../src/domain/text.ts';
import { parseUuid } from '../../src/domain/uuid.ts';

describe('checkEntryText', () => {
  it('trims and accepts line breaks', () => {
    expect(checkEntryText('  a\nb\r\nc  ')).toEqual({ ok: true, text: 'a\nb\r\nc' });
  });

  it('rejects empty and whitespace-only texts', () => {
    expect(checkEntryText('   \n ').ok).toBe(false);
  });

  it('counts characters as code points, up to 2000', () => {
    expect(checkEntryText('🦆'.repeat(2000)).ok).toBe(true);
    expect(checkEntryText('a'.repeat(2001))).toMatchObject({ ok: false, reason: expect.stringContaining('2001') });
  });

  it('rejects control characters other than line breaks', () => {
    for (const c of ['\u0000', '\t', '\u0007', '\u001b', '\u007f', '\u0085']) {
      expect(checkEntryText(`a${c}b`)).toMatchObject({ ok: false, reason: expect.stringContaining('U+') });
    }
  });

  it('rejects unpaired surrogates', () => {
    expect(checkEntryText('a\ud800b').ok).toBe(false);
  });
});

describe('textKey and isMultiline', () => {
  it('compares case-insensitively after NFC normalisation', () => {
    expect(textKey(' Cafe\u0301 ')).toBe(textKey('CAFÉ'));
  });

  it('knows multi-line texts', () => {
    expect(isMultiline('a\nb')).toBe(true);
    expect(isMultiline('a\rb')).toBe(true);
    expect(isMultiline('ab')).toBe(false);
  });
});

describe('parseUuid', () => {
  it('accepts any case and returns lower case', () => {
    expect(parseUuid('6F1C2A0E-8A4B-4C1E-9F57-2F3B9D0C1A11')).toBe('6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11');
  });

  it('rejects anything else', () => {
    for (const bad of ['', 'xyz', '6f1c2a0e8a4b4c1e9f572f3b9d0c1a11', '6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a1g', ' 6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11']) {
      expect(parseUuid(bad)).toBeNull();
    }
  });
});
