/**
 * OData v2 verbose JSON (`$format=json`): `{"d": {"results": [...], "__count", "__next"}}` for the
 * feed and `{"d": {...}}` for one entity, each entity with its `__metadata`. As OData v2 prescribes,
 * Edm.Int64 is a string and Edm.DateTime is `"\/Date(<ms>)\/"`. Written page by page, like Atom.
 */
import { QUALIFIED_TYPE, type ODataEntity, type PropertyName } from '../../domain/odata/model.ts';
import { entityPath } from './entity.ts';
import type { FeedExtras } from './atom.ts';

export const JSON_CONTENT_TYPE = 'application/json;charset=utf-8';

export interface JsonContext {
  /** The absolute service root, ending with a slash. */
  serviceRoot: string;
  select: readonly PropertyName[];
}

function property(entity: ODataEntity, name: PropertyName): string {
  switch (name) {
    case 'timestamp':
      return `"timestamp":"${entity.timestamp}"`;
    case 'created':
      // The escaped slashes mark the string as a date for JSON readers that look at the raw text.
      return `"created":"\\/Date(${entity.createdMs})\\/"`;
    default:
      return `${JSON.stringify(name)}:${JSON.stringify(entity[name])}`;
  }
}

/** jsonEntity writes one entity object with its `__metadata`. */
function jsonEntity(entity: ODataEntity, context: JsonContext): string {
  const uri = context.serviceRoot + entityPath(entity.uuid);
  const metadata = JSON.stringify({ id: uri, uri, type: QUALIFIED_TYPE });
  return `{"__metadata":${metadata}${context.select.map((name) => `,${property(entity, name)}`).join('')}}`;
}

/** jsonFeed writes the feed of `nonsense_list` from pages of entities. */
export async function* jsonFeed(
  pages: AsyncIterable<readonly ODataEntity[]>,
  context: JsonContext,
  extras: FeedExtras = {},
): AsyncGenerator<string> {
  yield `{"d":{${extras.count === undefined ? '' : `"__count":"${extras.count}",`}"results":[`;
  let first = true;
  for await (const page of pages) {
    if (page.length === 0) continue;
    yield (first ? '\n' : ',\n') + page.map((entity) => jsonEntity(entity, context)).join(',\n');
    first = false;
  }
  yield `]${extras.next === undefined ? '' : `,"__next":${JSON.stringify(extras.next)}`}}}\n`;
}

/** jsonEntry writes one entity as `{"d": {...}}`. */
export function jsonEntry(entity: ODataEntity, context: JsonContext): string {
  return `{"d":${jsonEntity(entity, context)}}\n`;
}
