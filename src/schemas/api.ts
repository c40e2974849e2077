/**
 * The response and request schemas of the public `/api/v1`. They validate requests, drive the fast
 * JSON serialiser, and are the OpenAPI document: one definition for all three. Request schemas may
 * carry `x-expects` (schemas/validator.ts): the words an error message uses for what is accepted.
 */
import { Type, type Static, type TSchema } from 'typebox';
import { EMOJI_NAME_PATTERN } from '../domain/emojis.ts';
import { EXPORT_FORMATS, type ExportFormat } from '../domain/export-params.ts';
import { REPORT_REASONS, type ReportReason } from '../domain/reports.ts';
import { MAX_SEARCH_LENGTH } from '../domain/search-text.ts';
import { MAX_DETAILS_LENGTH } from '../domain/text.ts';
import { EXPECTS } from './validator.ts';

const UUID_EXAMPLE = '6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11';

/** StringEnum is a string with a fixed set of values, as `enum` (TypeBox's unions of literals become `anyOf`). */
export function StringEnum<T extends string>(values: readonly T[], options: Record<string, unknown> = {}) {
  return Type.Unsafe<T>({ type: 'string', enum: [...values], ...options });
}

/** Nullable allows null besides what `schema` accepts, as `type: [..., "null"]`, so limits still apply to the value. */
export function Nullable<T extends TSchema>(schema: T, options: Record<string, unknown> = {}) {
  const { type, ...rest } = schema as unknown as { type: string };
  return Type.Unsafe<Static<T> | null>({ ...rest, type: [type, 'null'], ...options });
}

/** A UUID as the API writes it: lower-case. */
const uuid = Type.String({ format: 'uuid', pattern: '^[0-9a-f-]{36}$', description: 'Lower-case UUID.', examples: [UUID_EXAMPLE] });

/** A UUID as requests may give it: in any case. */
export function UuidInput(description = 'A UUID, in any case.') {
  return Type.String({ format: 'uuid', description, examples: [UUID_EXAMPLE] });
}

/** The largest timestamp a filter takes: 15 digits, far beyond any date, within exact JavaScript integers. */
export const MAX_TIMESTAMP = 999_999_999_999_999;

/** A Unix time in seconds given in a request. */
export function TimestampInput(description: string) {
  return Type.Integer({
    minimum: 0,
    maximum: MAX_TIMESTAMP,
    description,
    examples: [1_700_000_000],
    [EXPECTS]: 'a non-negative integer Unix timestamp in seconds (at most 15 digits), such as 1700000000',
  });
}

export const Entry = Type.Object(
  {
    uuid,
    nonsense: Type.String({ description: 'The text as delivered: server variables replaced, client-side variables kept.' }),
    original_nonsense: Type.Optional(
      Type.String({ description: 'The raw text; present only when the raw text contains a variable.' }),
    ),
    timestamp: Type.Integer({ description: 'Unix seconds when the entry was added.' }),
  },
  { title: 'Entry', additionalProperties: false },
);
export type Entry = Static<typeof Entry>;

export const Entries = Type.Array(Entry, { title: 'Entries', description: 'Entries ordered by timestamp, then uuid.' });

export const ExportCsv = Type.String({
  title: 'ExportCsv',
  contentMediaType: 'text/csv',
  description: 'RFC 4180 CSV, UTF-8 without BOM, CRLF between records: the header, then one record per entry. `original_nonsense` is empty when there is no variable; a cell beginning with `=`, `+`, `-`, `@`, tab, CR or `\'` is prefixed with `\'`.',
  pattern: '^uuid,nonsense,original_nonsense,timestamp\r\n',
});

export const ExportTxt = Type.String({
  title: 'ExportTxt',
  contentMediaType: 'text/plain',
  description: 'One delivered text per line, each followed by `\n`; single-line entries only.',
  pattern: '^([^\r\n]*\n)*$',
});

export const Status = Type.Object(
  {
    count: Type.Integer({ description: 'Number of visible entries.' }),
    latest_timestamp: Type.Unsafe<number | null>({ type: ['integer', 'null'], description: 'Timestamp of the latest entry.' }),
    latest_uuid: Type.Unsafe<string | null>({ type: ['string', 'null'], format: 'uuid', description: 'UUID of the latest entry.' }),
    revision: Type.Integer({ description: 'Grows with every change to entries, variables or emojis.' }),
  },
  { title: 'Status' },
);

export const Emoji = Type.Object(
  {
    name: Type.String({ pattern: EMOJI_NAME_PATTERN }),
    code: Type.String({ description: 'How the emoji is written in texts, e.g. `:blobcat:`.' }),
    url: Type.String({ format: 'uri', description: 'Absolute URL of the image.' }),
  },
  { title: 'Emoji' },
);

export const Variable = Type.Object(
  {
    name: Type.String({ description: 'The token as written in texts: `$NAME$` or `${name}`.' }),
    scope: Type.Union([Type.Literal('server'), Type.Literal('client')]),
    description: Type.String(),
    values: Type.Optional(Type.Array(Type.String(), { description: 'Server variables only: the values picked from.' })),
  },
  { title: 'Variable' },
);

export const GalaxyPoint = Type.Object(
  {
    uuid,
    umap_dim_0: Type.Number({ description: 'x: centred on zero; the central 98% of the stars within ±8, every star within ±10.' }),
    umap_dim_1: Type.Number({ description: 'y, as x.' }),
    umap_dim_2: Type.Number({ description: 'z, as x.' }),
    point_size: Type.Number({ description: '0.1 + 0.5 × ln(1 + length) / ln(2001), from the length of the text in characters: 0.1 to 0.6.' }),
  },
  { title: 'GalaxyPoint' },
);

/** The name of the problem schema among the shared schemas (`components.schemas.Problem`). */
export const PROBLEM_SCHEMA_ID = 'Problem';

export const Problem = Type.Object(
  {
    type: Type.String({ description: 'Always `about:blank`: the status says what kind of problem it is.' }),
    title: Type.String({ description: 'The HTTP status phrase.' }),
    status: Type.Integer({ minimum: 400, maximum: 599 }),
    detail: Type.String({ description: 'What went wrong and what to do, for a person.' }),
    parameter: Type.Optional(Type.String({ description: 'For a 400: the query or path parameter at fault.' })),
    field: Type.Optional(Type.String({ description: 'For a 400: the body field at fault, e.g. `values[2]`.' })),
    existing: Type.Optional(Type.String({ format: 'uuid', description: 'For a 409: the entry that already has the text.' })),
  },
  { $id: PROBLEM_SCHEMA_ID, title: 'Problem', description: 'RFC 9457 problem details (`application/problem+json`).', additionalProperties: true },
);

const PROBLEM_DESCRIPTIONS: Record<number, string> = {
  400: 'The request is not valid: the detail names the parameter or field (also in `parameter` or `field`).',
  401: 'No token, or one that is not valid or has been revoked (`WWW-Authenticate: Bearer`).',
  404: 'Nothing is there.',
  409: 'It conflicts with what exists.',
  413: 'The body is larger than this route takes; the detail gives the limit.',
  415: 'The body is not of a type this route takes.',
  429: 'Too many requests from this address; `Retry-After` says when to try again.',
  503: 'Not available at the moment; `Retry-After` says when to try again.',
};

/** problemResponse documents one error status as problem+json (the shared `Problem` schema). */
export function problemResponse(status: number, description = PROBLEM_DESCRIPTIONS[status] ?? 'Problem details') {
  return { description, content: { 'application/problem+json': { schema: Type.Ref(PROBLEM_SCHEMA_ID) } } };
}

/** problemResponses documents error statuses of a route, each as problem+json. */
export function problemResponses(...statuses: number[]): Record<number, ReturnType<typeof problemResponse>> {
  return Object.fromEntries(statuses.map((status) => [status, problemResponse(status)]));
}

/** NOT_MODIFIED documents the 304 of a route that revalidates with `If-None-Match`. */
export const NOT_MODIFIED = { 304: Type.Null({ description: 'Not modified: the copy named by `If-None-Match` is current.' }) };

export const EntryPathParams = Type.Object({
  id: Type.String({
    description: 'The entry UUID, in any case. With an extension other than `.png` the answer is 404: share images exist as PNG only.',
    pattern: '^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}(\\.[^/]*)?$',
    maxLength: 100,
    examples: [UUID_EXAMPLE],
    [EXPECTS]: `a UUID such as ${UUID_EXAMPLE}`,
  }),
});

export const ExportQuery = Type.Object({
  q: Type.Optional(
    Type.String({ maxLength: MAX_SEARCH_LENGTH, description: `Case-insensitive substring of the raw text, taken as given (not trimmed), at most ${MAX_SEARCH_LENGTH} characters. Empty: no filter.` }),
  ),
  format: Type.Optional(StringEnum<ExportFormat>(EXPORT_FORMATS, { default: 'csv', description: 'The file format.' })),
  after: Type.Optional(TimestampInput('Only entries with timestamp > after (Unix seconds).')),
  before: Type.Optional(TimestampInput('Only entries with timestamp < before (Unix seconds).')),
});
export type ExportQuery = Static<typeof ExportQuery>;

export const ReportBody = Type.Object(
  {
    entryUuid: UuidInput('The UUID of the entry you report.'),
    reason: StringEnum<ReportReason>(REPORT_REASONS),
    details: Type.Optional(Nullable(Type.String({ maxLength: MAX_DETAILS_LENGTH }), { description: 'Free text, meant for reason `other`; trimmed; line breaks allowed.' })),
  },
  { description: 'Unknown fields are ignored.' },
);
export type ReportBody = Static<typeof ReportBody>;

export const ReportCreated = Type.Object(
  {
    id: uuid,
    entryUuid: uuid,
    reason: StringEnum<ReportReason>(REPORT_REASONS),
    status: Type.Literal('open'),
  },
  { title: 'ReportCreated', additionalProperties: false },
);

export const EmojiImageParams = Type.Object({
  file: Type.String({ description: 'The emoji name followed by its image extension, e.g. `blobcat.png`.', maxLength: 100 }),
});
