/**
 * Rules for texts people send, beyond what a schema can say: an entry's raw text (1 to 2,000
 * characters after trimming, line breaks allowed, no other control characters), a
 * report's details, and single-line texts (a variable's description and values). Characters are
 * Unicode code points. The schemas bound the lengths as sent; these rules trim, then check.
 */
export const MAX_TEXT_LENGTH = 2000;
export const MAX_DETAILS_LENGTH = 1000;

// C0 and C1 controls other than \n and \r, plus DEL.
const FORBIDDEN_CONTROL = /[\u0000-\u0009\u000B\u000C\u000E-\u001F\u007F-\u009F]/;
// Every C0 and C1 control, line breaks included, plus DEL.
const ANY_CONTROL = /[\u0000-\u001F\u007F-\u009F]/;

export type TextCheck = { ok: true; text: string } | { ok: false; reason: string };

/** checkEntryText trims `raw` and tells whether it is an acceptable entry text. */
export function checkEntryText(raw: string): TextCheck {
  const text = raw.trim();
  if (text.length === 0) return { ok: false, reason: 'the text is empty' };
  const length = codePointLength(text);
  if (length > MAX_TEXT_LENGTH) {
    return { ok: false, reason: `the text has ${length} characters; at most ${MAX_TEXT_LENGTH} are allowed` };
  }
  const bad = FORBIDDEN_CONTROL.exec(text);
  if (bad) {
    const code = bad[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
    return { ok: false, reason: `the text contains the control character U+${code}; only line breaks are allowed` };
  }
  if (!text.isWellFormed()) return { ok: false, reason: 'the text contains an unpaired surrogate' };
  return { ok: true, text };
}

/** checkDetails trims a report's details: line breaks are allowed, other controls are not; empty means none. */
export function checkDetails(raw: string): { ok: true; text: string | null } | { ok: false; reason: string } {
  const text = raw.trim();
  if (FORBIDDEN_CONTROL.test(text) || !text.isWellFormed()) return { ok: false, reason: 'it contains control characters; only line breaks are allowed' };
  return { ok: true, text: text === '' ? null : text };
}

/** checkLine trims a single-line text: no line breaks or other control characters, and not empty unless `allowEmpty`. */
export function checkLine(raw: string, allowEmpty = false): TextCheck {
  const text = raw.trim();
  if (text === '' && !allowEmpty) return { ok: false, reason: 'it is empty' };
  if (ANY_CONTROL.test(text) || !text.isWellFormed()) return { ok: false, reason: 'it must be a single line without control characters' };
  return { ok: true, text };
}

/** textKey is the form two texts are compared in to find duplicates. */
export function textKey(text: string): string {
  return text.trim().normalize('NFC').toLowerCase();
}

/** isMultiline tells whether a raw text spans more than one line. */
export function isMultiline(text: string): boolean {
  return text.includes('\n') || text.includes('\r');
}

function codePointLength(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) i++;
    count++;
  }
  return count;
}

const ASCII_ONLY = /^[\x00-\x7f]*$/;

/** isAscii tells whether a text is all ASCII, so that its length in UTF-8 bytes is its length in characters. */
export function isAscii(text: string): boolean {
  return ASCII_ONLY.test(text);
}
