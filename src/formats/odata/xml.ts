/**
 * XML escaping for the OData documents. Every string from the database is untrusted: markup
 * characters are escaped, and characters XML 1.0 forbids (control characters other than tab, line
 * feed and carriage return, U+FFFE, U+FFFF, unpaired surrogates) become U+FFFD, so that no stored text
 * can make a feed unreadable. Line breaks are written as character references where a parser would
 * otherwise normalise them away (a carriage return in text, any whitespace in an attribute).
 */

// Forbidden in XML 1.0 documents: https://www.w3.org/TR/xml/#charsets
const FORBIDDEN = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/g;
const TEXT_SPECIAL = /[&<>"'\r]/g;
const ATTRIBUTE_SPECIAL = /[&<>"'\r\n\t]/g;

const REFERENCES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&apos;',
  '\r': '&#xD;',
  '\n': '&#xA;',
  '\t': '&#x9;',
};

/** xmlSafe replaces every character that may not appear in an XML 1.0 document with U+FFFD. */
export function xmlSafe(value: string): string {
  const wellFormed = value.isWellFormed() ? value : value.toWellFormed();
  return wellFormed.replace(FORBIDDEN, '\uFFFD');
}

/** escapeText makes a string safe as element content. */
export function escapeText(value: string): string {
  return xmlSafe(value).replace(TEXT_SPECIAL, (c) => REFERENCES[c]!);
}

/** escapeAttribute makes a string safe inside a double- or single-quoted attribute value. */
export function escapeAttribute(value: string): string {
  return xmlSafe(value).replace(ATTRIBUTE_SPECIAL, (c) => REFERENCES[c]!);
}

export const XML_DECLARATION = '<?xml version="1.0" encoding="utf-8" standalone="yes"?>\n';

/** The XML namespaces of OData v2 Atom and EDMX documents. */
export const NS = {
  atom: 'http://www.w3.org/2005/Atom',
  app: 'http://www.w3.org/2007/app',
  d: 'http://schemas.microsoft.com/ado/2007/08/dataservices',
  m: 'http://schemas.microsoft.com/ado/2007/08/dataservices/metadata',
  scheme: 'http://schemas.microsoft.com/ado/2007/08/dataservices/scheme',
  edmx: 'http://schemas.microsoft.com/ado/2007/06/edmx',
  edm: 'http://schemas.microsoft.com/ado/2008/09/edm',
} as const;
