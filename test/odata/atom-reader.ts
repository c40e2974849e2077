/**
 * Reading OData v2 Atom the way a consumer does: with a namespace-aware XML parser (@xmldom/xmldom),
 * looking elements up by namespace URI, never by prefix. Parse errors and warnings fail the test.
 */
import { DOMParser, type Document, type Element } from '@xmldom/xmldom';

export const NS = {
  atom: 'http://www.w3.org/2005/Atom',
  app: 'http://www.w3.org/2007/app',
  d: 'http://schemas.microsoft.com/ado/2007/08/dataservices',
  m: 'http://schemas.microsoft.com/ado/2007/08/dataservices/metadata',
  edmx: 'http://schemas.microsoft.com/ado/2007/06/edmx',
  edm: 'http://schemas.microsoft.com/ado/2008/09/edm',
};

// Characters XML 1.0 forbids; xmldom accepts some of them, so they are checked on the raw text.
const FORBIDDEN = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function parseXml(text: string): Document {
  const bad = FORBIDDEN.exec(text);
  if (bad) throw new Error(`character U+${bad[0].charCodeAt(0).toString(16)} is not allowed in XML at ${bad.index}`);
  if (/&(?!(?:amp|lt|gt|quot|apos|#x[0-9a-fA-F]+|#\d+);)/.test(text)) throw new Error('a bare & in the XML');
  const problems: string[] = [];
  const doc = new DOMParser({
    onError: (level, message) => {
      // U+FFFD is what the service writes in place of forbidden characters: expected, not an encoding slip.
      if (!(level === 'warning' && message.includes('replacement character'))) problems.push(`${level}: ${message}`);
    },
  }).parseFromString(text, 'text/xml');
  if (problems.length > 0) throw new Error(problems.join('\n'));
  return doc;
}

export function children(parent: Element | Document, ns: string, name: string): Element[] {
  return Array.from(parent.getElementsByTagNameNS(ns, name)).filter((e) => e.parentNode === parent || parent.nodeType === 9);
}

export function child(parent: Element, ns: string, name: string): Element | undefined {
  return Array.from(parent.childNodes).find((n): n is Element => n.nodeType === 1 && (n as Element).namespaceURI === ns && (n as Element).localName === name);
}

export interface AtomEntry {
  id: string;
  editHref: string;
  category: string | null;
  properties: Record<string, { value: string | null; type: string | null }>;
}

export interface AtomFeed {
  base: string | null;
  id: string;
  entries: AtomEntry[];
  next: string | null;
  count: string | null;
}

export function readEntry(entry: Element): AtomEntry {
  const properties: AtomEntry['properties'] = {};
  const props = child(child(entry, NS.atom, 'content')!, NS.m, 'properties')!;
  for (const node of Array.from(props.childNodes)) {
    if (node.nodeType !== 1) continue;
    const element = node as Element;
    if (element.namespaceURI !== NS.d) throw new Error(`property ${element.nodeName} is not in the d: namespace`);
    const isNull = element.getAttributeNS(NS.m, 'null') === 'true';
    properties[element.localName!] = { value: isNull ? null : (element.textContent ?? ''), type: element.getAttributeNS(NS.m, 'type') || null };
  }
  const edit = Array.from(entry.childNodes).find((n) => n.nodeType === 1 && (n as Element).localName === 'link' && (n as Element).getAttribute('rel') === 'edit') as Element;
  return {
    id: child(entry, NS.atom, 'id')!.textContent!,
    editHref: edit.getAttribute('href')!,
    category: child(entry, NS.atom, 'category')?.getAttribute('term') ?? null,
    properties,
  };
}

export function readFeed(text: string): AtomFeed {
  const feed = parseXml(text).documentElement!;
  if (feed.namespaceURI !== NS.atom || feed.localName !== 'feed') throw new Error(`root is ${feed.nodeName}`);
  const links = Array.from(feed.childNodes).filter((n): n is Element => n.nodeType === 1 && (n as Element).localName === 'link');
  return {
    base: feed.getAttributeNS('http://www.w3.org/XML/1998/namespace', 'base') || null,
    id: child(feed, NS.atom, 'id')!.textContent!,
    entries: Array.from(feed.childNodes)
      .filter((n): n is Element => n.nodeType === 1 && (n as Element).namespaceURI === NS.atom && (n as Element).localName === 'entry')
      .map(readEntry),
    next: links.find((l) => l.getAttribute('rel') === 'next')?.getAttribute('href') ?? null,
    count: child(feed, NS.m, 'count')?.textContent ?? null,
  };
}
