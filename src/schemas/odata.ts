/**
 * The OData v2 interface in the OpenAPI document. Its routes take any path below `/odata/v2` and parse
 * the OData URL conventions themselves (domain/odata/), which no JSON Schema can express; so its
 * resources are described here, beside the model they come from, and added to the document by
 * plugins/docs.ts. Errors are in the OData format (XML, or JSON with `$format=json`), not problem+json.
 */
import { Type } from 'typebox';
import { ENTITY_SET, PROPERTY_NAMES, QUALIFIED_TYPE } from '../domain/odata/model.ts';
import { StringEnum } from './api.ts';
import type { ResponseHeaderName } from './headers.ts';

const PREFIX = '/odata/v2';
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const response = (name: string) => ({ $ref: `#/components/responses/${name}` });
const headers = (...names: ResponseHeaderName[]) => Object.fromEntries(names.map((name) => [name, { $ref: `#/components/headers/${name}` }]));
/** What every OData answer of a route carries: the request id, caching, the version, and the rate limit's (reads are limited). */
const ODATA_HEADERS = ['X-Request-Id', 'Cache-Control', 'DataServiceVersion', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'] as const;

const Xml = (description: string) => Type.String({ description, contentMediaType: 'application/xml' });

const Metadata = Type.Object(
  { id: Type.String({ format: 'uri' }), uri: Type.String({ format: 'uri' }), type: Type.Literal(QUALIFIED_TYPE) },
  { additionalProperties: false },
);

/** An entity in verbose JSON: `timestamp` (Edm.Int64) is a string and `created` (Edm.DateTime) is `/Date(<ms>)/`, as OData v2 writes them. */
const ODataEntityJson = Type.Object(
  {
    __metadata: Metadata,
    uuid: Type.Optional(Type.String({ format: 'uuid' })),
    nonsense: Type.Optional(Type.String()),
    original_nonsense: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    timestamp: Type.Optional(Type.String({ pattern: '^\\d+$', description: 'Edm.Int64: Unix seconds, as a string.' })),
    created: Type.Optional(Type.String({ pattern: '^/Date\\(-?\\d+\\)/$', description: 'Edm.DateTime: the same instant, in milliseconds.' })),
    multiline: Type.Optional(Type.Boolean()),
  },
  { title: 'ODataEntityJson', additionalProperties: false, description: 'Properties not in `$select` are left out.' },
);

const ODataFeedJson = Type.Object(
  {
    d: Type.Object(
      {
        results: Type.Array(ref('ODataEntityJson') as never),
        __count: Type.Optional(Type.String({ pattern: '^\\d+$', description: 'With `$inlinecount=allpages`: the count of all matches.' })),
        __next: Type.Optional(Type.String({ format: 'uri', description: 'The next page, while more remain.' })),
      },
      { additionalProperties: false },
    ),
  },
  { title: 'ODataFeedJson', additionalProperties: false },
);

const ODataEntryJson = Type.Object({ d: ref('ODataEntityJson') as never }, { title: 'ODataEntryJson', additionalProperties: false });

const ODataServiceJson = Type.Object(
  { d: Type.Object({ EntitySets: Type.Array(Type.Literal(ENTITY_SET)) }, { additionalProperties: false }) },
  { title: 'ODataServiceJson', additionalProperties: false },
);

const ODataErrorJson = Type.Object(
  {
    error: Type.Object({
      code: Type.String(),
      message: Type.Object({ lang: Type.String(), value: Type.String() }),
    }),
  },
  { title: 'ODataErrorJson' },
);

const ODATA_ERROR_CONTENT = {
  'application/xml': { schema: Xml('`<error xmlns="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"><code/><message xml:lang="en-US">…</message></error>`') },
  'application/json': { schema: ref('ODataErrorJson') },
};

/** Schemas and responses the OData paths refer to. */
export const ODATA_COMPONENTS = {
  schemas: { ODataEntityJson, ODataFeedJson, ODataEntryJson, ODataServiceJson, ODataErrorJson },
  responses: {
    ODataError: {
      description: 'An OData error: `<error>` in XML, or `{"error": …}` with `$format=json` (or when JSON is preferred). A 429 or 503 says in `Retry-After` when to try again.',
      headers: headers(...ODATA_HEADERS, 'Retry-After'),
      content: ODATA_ERROR_CONTENT,
    },
    ODataMethodNotAllowed: {
      description: 'The interface is read-only: `Allow` lists GET and HEAD; an OData error.',
      headers: headers('X-Request-Id', 'Cache-Control', 'DataServiceVersion', 'Allow'),
      content: ODATA_ERROR_CONTENT,
    },
    ODataNotModified: { description: 'Not modified: the copy named by `If-None-Match` is current.', headers: headers(...ODATA_HEADERS, 'ETag') },
  },
};

const format = {
  name: '$format',
  in: 'query',
  description: 'The response format; without it the `Accept` header decides, and Atom is the default.',
  schema: StringEnum(['json', 'atom', 'xml', 'application/json', 'application/atom+xml', 'application/xml']),
};

const queryOptions = [
  { name: '$filter', in: 'query', description: 'A boolean expression: comparison and logical operators, `substringof`, `startswith`, `endswith`, `tolower`, `toupper`, `length`; guid, datetime, string and integer literals.', schema: Type.String({ maxLength: 2000 }), example: "substringof('cat', nonsense) and timestamp gt 1700000000" },
  { name: '$orderby', in: 'query', description: 'Properties with `asc` or `desc`, comma-separated.', schema: Type.String({ maxLength: 2000 }), example: 'timestamp desc' },
  { name: '$select', in: 'query', description: `Properties to return, comma-separated (${PROPERTY_NAMES.join(', ')}), or \`*\`.`, schema: Type.String({ maxLength: 2000 }) },
  { name: '$top', in: 'query', description: 'At most this many entities (across pages).', schema: Type.Integer({ minimum: 0, maximum: 2 ** 31 - 1 }) },
  { name: '$skip', in: 'query', description: 'Skip this many entities.', schema: Type.Integer({ minimum: 0, maximum: 2 ** 31 - 1 }) },
  { name: '$skiptoken', in: 'query', description: 'Continue after a position; as given in a `next` link.', schema: Type.String({ maxLength: 2000 }) },
  { name: '$inlinecount', in: 'query', description: '`allpages` adds the count of all matches to the feed.', schema: StringEnum(['allpages', 'none']) },
  format,
  { name: 'all', in: 'query', description: '`true`: the whole result in one streamed response, without pages of 100.', schema: Type.Boolean() },
];

const operation = (id: string, summary: string, description: string, parameters: unknown[], ok: unknown) => ({
  get: {
    operationId: id,
    summary,
    description,
    tags: ['odata'],
    parameters,
    // Every error here is in the OData format, a refused or failed request included.
    responses: Object.fromEntries([[200, { ...(ok as object), headers: headers(...ODATA_HEADERS, 'ETag') }], [304, response('ODataNotModified')], ...[400, 404, 429, 500, 503].map((status) => [status, response('ODataError')])]),
  },
});

function entity(id: string, summary: string) {
  return operation(
    id,
    summary,
    'A visible entry as an Atom entry (`application/atom+xml;type=entry`) or verbose JSON.',
    [{ name: 'uuid', in: 'path', required: true, description: 'The entry UUID, in any case.', schema: Type.String({ format: 'uuid' }) }, queryOptions[2], format],
    {
      description: 'The entity',
      content: { 'application/atom+xml': { schema: Type.String({ contentMediaType: 'application/atom+xml' }) }, 'application/json': { schema: ref('ODataEntryJson') } },
    },
  );
}

const serviceDocument = (id: string, description: string) =>
  operation(id, 'OData service document', description, [format], {
    description: 'The service document',
    content: { 'application/atomsvc+xml': { schema: Type.String({ contentMediaType: 'application/atomsvc+xml' }) }, 'application/json': { schema: ref('ODataServiceJson') } },
  });

/**
 * The OData resources, as OpenAPI path items. The service root is `/odata/v2/`, the address OData
 * clients are given (relative links in its answers resolve against it); the router serves it without
 * the slash too.
 */
export const ODATA_PATHS = {
  [`${PREFIX}/`]: serviceDocument('getODataServiceRoot', 'The entity sets of the service: `nonsense_list`. The service root, as OData clients are given it.'),
  [PREFIX]: serviceDocument('getODataService', 'The entity sets of the service: `nonsense_list`; the same as `/odata/v2/`.'),
  [`${PREFIX}/$metadata`]: operation('getODataMetadata', 'OData metadata (EDMX)', 'The entity model, in EDMX with `DataServiceVersion 2.0`, always XML.', [], {
    description: 'The EDMX document',
    content: { 'application/xml': { schema: Xml('EDMX: entity set `nonsense_list` of entity type `Nonsense`, key `uuid`.') } },
  }),
  [`${PREFIX}/${ENTITY_SET}`]: operation(
    'getODataNonsenseList',
    'OData feed of the entries',
    'Visible entries as an Atom feed (`application/atom+xml;type=feed`) or verbose JSON. Pages of 100 with a `next` link, unless `all=true`.',
    queryOptions,
    {
      description: 'The feed',
      content: { 'application/atom+xml': { schema: Type.String({ contentMediaType: 'application/atom+xml' }) }, 'application/json': { schema: ref('ODataFeedJson') } },
    },
  ),
  [`${PREFIX}/${ENTITY_SET}/$count`]: operation(
    'getODataNonsenseListCount',
    'OData count of the entries',
    'How many entities the same URL without `/$count` would return across all its pages, as plain text.',
    queryOptions.filter((option) => option.name !== '$format' && option.name !== '$select' && option.name !== 'all'),
    { description: 'The count', content: { 'text/plain': { schema: Type.String({ pattern: '^\\d+$' }) } } },
  ),
  [`${PREFIX}/${ENTITY_SET}(guid'{uuid}')`]: entity('getODataNonsenseEntity', 'One OData entity by key'),
  [`${PREFIX}/${ENTITY_SET}(uuid=guid'{uuid}')`]: entity('getODataNonsenseEntityByNamedKey', 'One OData entity by key, the key named'),
};
