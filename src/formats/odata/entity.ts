/** From a stored entry to the values OData exposes for it (see the model in domain/odata/model.ts). */
import { entityKey, ENTITY_SET, type ODataEntity } from '../../domain/odata/model.ts';
import { isMultiline } from '../../domain/text.ts';
import { mathRandomPick, type PickIndex, type ServerVariables } from '../../domain/variables.ts';
import type { EntryRecord } from '../../domain/records.ts';
import { deliverEntry } from '../../domain/delivered-entry.ts';

/**
 * toODataEntity delivers an entry as the API does (server variables replaced; `original_nonsense` the
 * raw text exactly when it holds a known variable) and adds the derived `created` and `multiline`.
 */
export function toODataEntity(entry: EntryRecord, variables: ServerVariables, pick: PickIndex = mathRandomPick): ODataEntity {
  const delivered = deliverEntry(entry, variables, pick);
  return {
    uuid: delivered.uuid,
    nonsense: delivered.nonsense,
    original_nonsense: delivered.original_nonsense ?? null,
    timestamp: delivered.timestamp,
    createdMs: delivered.timestamp * 1000,
    multiline: isMultiline(entry.text),
  };
}

/** entityPath is an entity's address relative to the service root, e.g. `nonsense_list(guid'…')`. */
export function entityPath(uuid: string): string {
  return `${ENTITY_SET}${entityKey(uuid)}`;
}
