/**
 * The resource path of an OData request, below the service root: the service document, `$metadata`,
 * the entity set, its `$count`, or one entity by key (`nonsense_list(guid'…')`, or with the key named:
 * `nonsense_list(uuid=guid'…')`). Anything else is refused here with a message saying what exists.
 */
import { ODataRequestError } from './errors.ts';
import { ENTITY_SET } from './model.ts';

export type ResourcePath =
  | { kind: 'service' }
  | { kind: 'metadata' }
  | { kind: 'collection' }
  | { kind: 'count' }
  | { kind: 'entity'; uuid: string };

const KEY = /^(?:uuid=)?guid'([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})'$/i;

/** parseResourcePath reads a path relative to the service root, still percent-encoded. */
export function parseResourcePath(encoded: string): ResourcePath {
  let path: string;
  try {
    path = decodeURIComponent(encoded);
  } catch {
    throw new ODataRequestError('The path is not valid percent-encoded UTF-8.');
  }
  path = path.replace(/\/{2,}/g, '/').replace(/^\/|\/$/g, '');
  if (path === '') return { kind: 'service' };
  if (path === '$metadata') return { kind: 'metadata' };
  if (path === ENTITY_SET) return { kind: 'collection' };
  if (path === `${ENTITY_SET}/$count`) return { kind: 'count' };
  if (path.startsWith(`${ENTITY_SET}(`)) {
    const close = path.indexOf(')', ENTITY_SET.length);
    if (close === -1) throw new ODataRequestError(`The key of ${ENTITY_SET} is not closed with ')'.`);
    const key = KEY.exec(path.slice(ENTITY_SET.length + 1, close).trim());
    if (!key) {
      throw new ODataRequestError(`The key of ${ENTITY_SET} must be a GUID literal, as in ${ENTITY_SET}(guid'6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11').`);
    }
    const rest = path.slice(close + 1);
    if (rest !== '') {
      throw new ODataRequestError(`Addressing a property or link of an entity ("${rest.slice(0, 60)}") is not supported; request the entity and use $select.`);
    }
    return { kind: 'entity', uuid: key[1]!.toLowerCase() };
  }
  throw new ODataRequestError(
    `There is no resource "${path.slice(0, 80)}" in this service; it offers $metadata and the entity set ${ENTITY_SET}.`,
    404,
  );
}
