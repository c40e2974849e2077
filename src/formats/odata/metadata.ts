/** The service document and the `$metadata` (EDMX 1.0, CSDL 2.0) of the OData v2 interface. */
import { CONTAINER, ENTITY_SET, ENTITY_TYPE, NAMESPACE, PROPERTIES, QUALIFIED_TYPE } from '../../domain/odata/model.ts';
import { escapeAttribute, NS, XML_DECLARATION } from './xml.ts';

export const METADATA_CONTENT_TYPE = 'application/xml;charset=utf-8';
export const SERVICE_CONTENT_TYPE = 'application/atomsvc+xml;charset=utf-8';

/** metadataDocument describes the entity type and its container; it depends on nothing at run time. */
export function metadataDocument(): string {
  const properties = PROPERTIES.map(
    (p) => `        <Property Name="${p.name}" Type="${p.type}" Nullable="${p.nullable}"/>\n`,
  ).join('');
  return (
    XML_DECLARATION +
    `<edmx:Edmx Version="1.0" xmlns:edmx="${NS.edmx}">\n` +
    `  <edmx:DataServices m:DataServiceVersion="2.0" xmlns:m="${NS.m}">\n` +
    `    <Schema Namespace="${NAMESPACE}" xmlns="${NS.edm}">\n` +
    `      <EntityType Name="${ENTITY_TYPE}">\n` +
    `        <Key><PropertyRef Name="uuid"/></Key>\n` +
    properties +
    `      </EntityType>\n` +
    `      <EntityContainer Name="${CONTAINER}" m:IsDefaultEntityContainer="true">\n` +
    `        <EntitySet Name="${ENTITY_SET}" EntityType="${QUALIFIED_TYPE}"/>\n` +
    `      </EntityContainer>\n` +
    `    </Schema>\n` +
    `  </edmx:DataServices>\n` +
    `</edmx:Edmx>\n`
  );
}

/** serviceDocument lists the entity sets (AtomPub); `serviceRoot` ends with a slash. */
export function serviceDocument(serviceRoot: string): string {
  return (
    XML_DECLARATION +
    `<service xml:base="${escapeAttribute(serviceRoot)}" xmlns="${NS.app}" xmlns:atom="${NS.atom}">\n` +
    `  <workspace>\n` +
    `    <atom:title>Default</atom:title>\n` +
    `    <collection href="${ENTITY_SET}"><atom:title>${ENTITY_SET}</atom:title></collection>\n` +
    `  </workspace>\n` +
    `</service>\n`
  );
}

/** jsonServiceDocument is the service document in OData v2 JSON. */
export function jsonServiceDocument(): string {
  return `${JSON.stringify({ d: { EntitySets: [ENTITY_SET] } })}\n`;
}
