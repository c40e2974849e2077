/**
 * OData v2 Atom: the feed of `nonsense_list` and single entries, written as chunks while the entries
 * are read, so a whole-database feed needs no more memory than one page. Entry links are relative to
 * the `xml:base` (the service root); ids are absolute, as OData requires.
 */
import { ENTITY_SET, ENTITY_TYPE, QUALIFIED_TYPE, type ODataEntity, type PropertyName } from '../../domain/odata/model.ts';
import { entityPath } from './entity.ts';
import { escapeAttribute, escapeText, NS, XML_DECLARATION } from './xml.ts';

export const ATOM_FEED_CONTENT_TYPE = 'application/atom+xml;type=feed;charset=utf-8';
export const ATOM_ENTRY_CONTENT_TYPE = 'application/atom+xml;type=entry;charset=utf-8';

export interface AtomContext {
  /** The absolute service root, ending with a slash, e.g. `https://example.org/odata/v2/`. */
  serviceRoot: string;
  select: readonly PropertyName[];
  /** The feed's `updated`, ISO 8601 with Z. */
  updated: string;
}

export interface FeedExtras {
  /** `$inlinecount=allpages`: the number of entries matching, before paging. */
  count?: number;
  /** The absolute URL of the next page. */
  next?: string;
}

// Edm.DateTime in Atom has four-digit years; instants outside them are clamped (see docs/odata.md).
const MIN_MS = Date.UTC(1, 0, 1) - 1;
const MAX_MS = Date.UTC(9999, 11, 31, 23, 59, 59);

function isoInstant(ms: number): string {
  const clamped = Math.min(MAX_MS, Math.max(MIN_MS + 1, ms));
  const date = new Date(clamped);
  date.setUTCMilliseconds(0);
  return date.toISOString().slice(0, 19);
}

const NAMESPACES = `xmlns="${NS.atom}" xmlns:d="${NS.d}" xmlns:m="${NS.m}"`;

function property(entity: ODataEntity, name: PropertyName): string {
  switch (name) {
    case 'uuid':
      return `<d:uuid m:type="Edm.Guid">${entity.uuid}</d:uuid>`;
    case 'nonsense':
      return `<d:nonsense>${escapeText(entity.nonsense)}</d:nonsense>`;
    case 'original_nonsense':
      return entity.original_nonsense === null
        ? '<d:original_nonsense m:null="true"/>'
        : `<d:original_nonsense>${escapeText(entity.original_nonsense)}</d:original_nonsense>`;
    case 'timestamp':
      return `<d:timestamp m:type="Edm.Int64">${entity.timestamp}</d:timestamp>`;
    case 'created':
      return `<d:created m:type="Edm.DateTime">${isoInstant(entity.createdMs)}</d:created>`;
    case 'multiline':
      return `<d:multiline m:type="Edm.Boolean">${entity.multiline}</d:multiline>`;
  }
}

/** entryBody is the inside of an `<entry>`: id, title, updated, author, links, category, properties. */
function entryBody(entity: ODataEntity, context: AtomContext): string {
  const path = entityPath(entity.uuid);
  return (
    `<id>${escapeText(context.serviceRoot + path)}</id>` +
    '<title type="text"/>' +
    `<updated>${isoInstant(entity.createdMs)}Z</updated>` +
    '<author><name/></author>' +
    `<link rel="edit" title="${ENTITY_TYPE}" href="${escapeAttribute(path)}"/>` +
    `<category term="${QUALIFIED_TYPE}" scheme="${NS.scheme}"/>` +
    '<content type="application/xml"><m:properties>' +
    context.select.map((name) => property(entity, name)).join('') +
    '</m:properties></content>'
  );
}

/** atomFeed writes the feed of `nonsense_list` from pages of entities. */
export async function* atomFeed(
  pages: AsyncIterable<readonly ODataEntity[]>,
  context: AtomContext,
  extras: FeedExtras = {},
): AsyncGenerator<string> {
  const root = escapeText(context.serviceRoot);
  let head =
    XML_DECLARATION +
    `<feed xml:base="${escapeAttribute(context.serviceRoot)}" ${NAMESPACES}>\n` +
    `<id>${root}${ENTITY_SET}</id>\n` +
    `<title type="text">${ENTITY_SET}</title>\n` +
    `<updated>${context.updated}</updated>\n` +
    `<link rel="self" title="${ENTITY_SET}" href="${ENTITY_SET}"/>\n`;
  if (extras.count !== undefined) head += `<m:count>${extras.count}</m:count>\n`;
  yield head;
  for await (const page of pages) {
    yield page.map((entity) => `<entry>${entryBody(entity, context)}</entry>\n`).join('');
  }
  const next = extras.next === undefined ? '' : `<link rel="next" href="${escapeAttribute(extras.next)}"/>\n`;
  yield `${next}</feed>\n`;
}

/** atomEntry writes one entity as a standalone Atom entry document. */
export function atomEntry(entity: ODataEntity, context: AtomContext): string {
  return `${XML_DECLARATION}<entry xml:base="${escapeAttribute(context.serviceRoot)}" ${NAMESPACES}>${entryBody(entity, context)}</entry>\n`;
}
