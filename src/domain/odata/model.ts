/**
 * The OData v2 entity model of the service: one entity set, `nonsense_list`, of the entity type
 * `Nonsense`. The `$metadata` document, the serialisers and the `$filter`/`$orderby` compiler all read
 * the property list from here, so a property means the same in every place.
 */

/** The EDM types the model and the `$filter` language use (`Edm.Int32` only for literals and `length`). */
export type EdmType = 'Edm.Guid' | 'Edm.String' | 'Edm.Int32' | 'Edm.Int64' | 'Edm.DateTime' | 'Edm.Boolean';

export const NAMESPACE = 'NonsenseService';
export const ENTITY_TYPE = 'Nonsense';
export const QUALIFIED_TYPE = `${NAMESPACE}.${ENTITY_TYPE}`;
export const CONTAINER = 'NonsenseEntities';
export const ENTITY_SET = 'nonsense_list';

export const PROPERTY_NAMES = ['uuid', 'nonsense', 'original_nonsense', 'timestamp', 'created', 'multiline'] as const;
export type PropertyName = (typeof PROPERTY_NAMES)[number];

export interface PropertyDefinition {
  name: PropertyName;
  type: EdmType;
  nullable: boolean;
}

/** The properties in document order; `uuid` is the key. */
export const PROPERTIES: readonly PropertyDefinition[] = [
  { name: 'uuid', type: 'Edm.Guid', nullable: false },
  { name: 'nonsense', type: 'Edm.String', nullable: false },
  { name: 'original_nonsense', type: 'Edm.String', nullable: true },
  { name: 'timestamp', type: 'Edm.Int64', nullable: false },
  { name: 'created', type: 'Edm.DateTime', nullable: false },
  { name: 'multiline', type: 'Edm.Boolean', nullable: false },
];

const BY_NAME: ReadonlyMap<string, PropertyDefinition> = new Map(PROPERTIES.map((p) => [p.name, p]));

/** propertyNamed returns the definition of a property (names are case-sensitive, as in OData), or undefined. */
export function propertyNamed(name: string): PropertyDefinition | undefined {
  return BY_NAME.get(name);
}

/** The values of one entity as OData exposes it; `original_nonsense` is null when the text has no variable. */
export interface ODataEntity {
  uuid: string;
  nonsense: string;
  original_nonsense: string | null;
  timestamp: number;
  /** The same instant as `timestamp`, in milliseconds (for Edm.DateTime). */
  createdMs: number;
  multiline: boolean;
}

/** entityKey is the key predicate of an entity, e.g. `(guid'6f1c…')`. */
export function entityKey(uuid: string): string {
  return `(guid'${uuid}')`;
}
