/**
 * The request and response schemas of the admin API (`/api/v1/admin`): they validate, serialise and
 * document it, like schemas/api.ts for the public API.
 */
import { Type } from 'typebox';
import { EMOJI_NAME_PATTERN, IMAGE_EXTENSIONS } from '../domain/emojis.ts';
import { REPORT_REASONS, type ReportReason } from '../domain/reports.ts';
import { MAX_SEARCH_LENGTH } from '../domain/search-text.ts';
import { MAX_TEXT_LENGTH } from '../domain/text.ts';
import { VARIABLE_NAME_PATTERN } from '../domain/variables.ts';
import { Nullable, StringEnum, TimestampInput, UuidInput } from './api.ts';
import { headersOf } from './headers.ts';
import { EXPECTS, TRIMMED_LENGTH, trimmedLengthPattern } from './validator.ts';

/** Answers and inputs write these limits; the text rules (trimming, control characters) are in domain/text.ts. */
export const MAX_DESCRIPTION_LENGTH = 500;
export const MAX_VARIABLE_VALUES = 500;
export const MAX_VALUE_LENGTH = 200;

const ENTRY_STATES = ['visible', 'hidden'] as const;
const REPORT_STATUSES = ['open', 'accepted', 'dismissed'] as const;
export type ReportStatusFilter = (typeof REPORT_STATUSES)[number];

const uuid = Type.String({ format: 'uuid', pattern: '^[0-9a-f-]{36}$', description: 'Lower-case UUID.' });

export const AdminEntry = Type.Object(
  {
    uuid,
    text: Type.String({ description: 'The raw text, variables unreplaced.' }),
    state: StringEnum(ENTRY_STATES),
    timestamp: Type.Integer({ description: 'Unix seconds when the entry was added.' }),
  },
  { title: 'AdminEntry', additionalProperties: false },
);

export const EntryUuidParams = Type.Object({ uuid: UuidInput('The entry UUID, in any case.') });

/**
 * The raw text: 1 to 2,000 characters after trimming. The pattern says it (a character that is not
 * white space, then at most 1,998 more and another such character, white space around), so that
 * clients can check it; the validator reports a refusal as the length it counts (schemas/validator.ts).
 */
const EntryText = Type.String({
  minLength: 1,
  pattern: trimmedLengthPattern(1, MAX_TEXT_LENGTH),
  [TRIMMED_LENGTH]: { min: 1, max: MAX_TEXT_LENGTH },
  description: 'The raw text: 1 to 2,000 characters after trimming (not blank); line breaks allowed, no other control characters.',
});

export const NewEntryBody = Type.Object({
  text: EntryText,
  timestamp: Type.Optional(TimestampInput('When the entry was added (Unix seconds); default: now.')),
});

export const EntryChangeBody = Type.Object(
  {
    text: Type.Optional(EntryText),
    state: Type.Optional(StringEnum(ENTRY_STATES, { description: 'Hidden entries disappear from every public endpoint at once.' })),
  },
  { anyOf: [{ required: ['text'] }, { required: ['state'] }], [EXPECTS]: 'a JSON object with "text", "state" or both' },
);

export const VariableNameParams = Type.Object({
  name: Type.String({
    maxLength: 100,
    pattern: VARIABLE_NAME_PATTERN.source,
    [EXPECTS]: 'written as $NAME$ (A-Z, 0-9, _) or ${name} (a-z, 0-9, _): anything else is not a variable name',
    description: 'The token as written in texts, URL-encoded: `%24ANIMAL%24` for `$ANIMAL$`, `%24%7Banimal%7D` for `${animal}`.',
  }),
});

export const VariableBody = Type.Object(
  {
    description: Type.String({ maxLength: MAX_DESCRIPTION_LENGTH, description: 'A single line; trimmed.' }),
    values: Type.Array(Type.String({ minLength: 1, maxLength: MAX_VALUE_LENGTH, description: 'A single line; trimmed.' }), {
      minItems: 1,
      maxItems: MAX_VARIABLE_VALUES,
    }),
  },
  { description: 'Unknown fields are ignored.' },
);

export const ServerVariable = Type.Object(
  {
    name: Type.String(),
    scope: Type.Literal('server'),
    description: Type.String(),
    values: Type.Array(Type.String()),
  },
  { title: 'ServerVariable', additionalProperties: false },
);

export const EmojiNameParams = Type.Object({
  name: Type.String({ pattern: EMOJI_NAME_PATTERN, [EXPECTS]: 'an emoji name: 2 to 32 of a-z, 0-9 and _' }),
});

export const IMAGE_TYPES = Object.keys(IMAGE_EXTENSIONS);

/** An uploaded image: the request body itself. */
export const EmojiImageBody = Type.Unsafe<Buffer>({ type: 'string', format: 'binary', description: 'The image bytes.' });

export const StoredEmoji = Type.Object(
  {
    name: Type.String({ pattern: EMOJI_NAME_PATTERN }),
    code: Type.String({ description: 'How texts write it: `:name:`.' }),
    contentType: StringEnum(IMAGE_TYPES, { description: 'The type found in the image bytes.' }),
  },
  { title: 'StoredEmoji', additionalProperties: false },
);

const ReportFields = {
  id: uuid,
  entryUuid: uuid,
  reason: StringEnum<ReportReason>(REPORT_REASONS),
  details: Nullable(Type.String()),
  status: StringEnum(REPORT_STATUSES),
  createdAt: Type.Integer({ description: 'When the report was filed, Unix seconds.' }),
  resolvedAt: Nullable(Type.Integer(), { description: 'When it was accepted or dismissed, Unix seconds; null while open.' }),
  resolvedBy: Nullable(Type.String(), { description: "The label of the moderator's token; null while open." }),
};
export const Report = Type.Object(ReportFields, { title: 'Report', additionalProperties: false });
export const ReportWithEntry = Type.Object({ ...ReportFields, entry: AdminEntry }, { title: 'ReportWithEntry', additionalProperties: false });

export const ReportIdParams = Type.Object({ id: UuidInput('The report id.') });

/** Admin lists give at most this many items a page, 100 unless `limit` says otherwise. */
export const MAX_PAGE_SIZE = 1000;
export const DEFAULT_PAGE_SIZE = 100;

export const PageLimit = Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE, description: 'Items per page.' });

/** The cursor of a list: opaque, given in the `Link` header of the previous page. */
const Cursor = Type.String({
  maxLength: 100,
  description: 'Where the page starts: take it from the `Link: <…>; rel="next"` header of the previous page, as the whole URL.',
  [EXPECTS]: 'the cursor of a `Link` header of a previous page',
});

/** The `Link` header of a list page: the next page's URL, while more remain. */
export const NEXT_PAGE_HEADERS = headersOf('Link');

export const ReportQuery = Type.Object({
  status: Type.Optional(StringEnum(REPORT_STATUSES, { default: 'open', description: 'Which reports to list.' })),
  limit: Type.Optional(PageLimit),
  cursor: Type.Optional(Cursor),
});

const SEARCH_STATES = ['any', 'visible', 'hidden'] as const;

export const EntrySearchQuery = Type.Object({
  q: Type.Optional(Type.String({ maxLength: MAX_SEARCH_LENGTH, description: 'Case-insensitive substring of the raw text, taken as given. Empty: any.' })),
  state: Type.Optional(StringEnum(SEARCH_STATES, { default: 'any', description: 'Which entries: visible, hidden, or any.' })),
  limit: Type.Optional(PageLimit),
  cursor: Type.Optional(Cursor),
});

export const LogRecord = Type.Object(
  {
    id: Type.Integer(),
    at: Type.Integer({ description: 'When it happened, Unix seconds.' }),
    actor: Type.String({ description: "The label of the moderator's token." }),
    action: Type.String({ examples: ['entry.create', 'entry.edit', 'entry.hide', 'entry.show', 'entry.delete', 'variable.put', 'emoji.put', 'report.accept'] }),
    target: Type.String({ description: 'The entry uuid, variable name, emoji name or report id acted on.' }),
    details: Nullable(Type.Object({}, { additionalProperties: true })),
  },
  { title: 'LogRecord', additionalProperties: false },
);

export const LogQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100, description: 'Records per page.' })),
  // Log ids are 32-bit integers on PostgreSQL: a larger bound would be an error there, not an empty page.
  before: Type.Optional(Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: 'Only records with a smaller id: the `id` of the last record of the previous page.' })),
});
