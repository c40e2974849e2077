/**
 * The search term `q`: one parser for the export, the command line, the
 * site's search and the admin search, with one limit. The term is taken as given, not trimmed: a
 * leading or trailing space is part of the substring asked for (docs/decisions.md).
 */
export const MAX_SEARCH_LENGTH = 200;

// Characters no entry text can hold (domain/text.ts): controls other than line breaks, and NUL,
// which PostgreSQL cannot even compare. A term holding one could only match nothing, or break a query.
const UNSTORABLE = /[\u0000-\u0009\u000B\u000C\u000E-\u001F\u007F-\u009F]/;

export type SearchTextCheck = { ok: true; value: string } | { ok: false; detail: string };

/** parseSearchText checks a search term given as `parameter`; an empty term means no filter. */
export function parseSearchText(value: string, parameter = 'q'): SearchTextCheck {
  let length = 0;
  for (const _ of value) length++;
  if (length > MAX_SEARCH_LENGTH) {
    return { ok: false, detail: `The parameter "${parameter}" has ${length} characters; at most ${MAX_SEARCH_LENGTH} are allowed.` };
  }
  const bad = UNSTORABLE.exec(value);
  if (bad) {
    const code = bad[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
    return { ok: false, detail: `The parameter "${parameter}" contains the control character U+${code}, which no entry can contain.` };
  }
  if (!value.isWellFormed()) return { ok: false, detail: `The parameter "${parameter}" contains an unpaired surrogate, which is not text.` };
  return { ok: true, value };
}

/** searchKey is the form a term is compared in: like an entry's text key, but not trimmed. */
export function searchKey(term: string): string {
  return term.normalize('NFC').toLowerCase();
}
