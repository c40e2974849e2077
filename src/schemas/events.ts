/**
 * The schemas of the change feed (`/api/v1/nonsense/changes`) and the event stream
 * (`/api/v1/nonsense/events`): docs/events.md says how a copy follows them.
 */
import { Type, type Static } from 'typebox';
import { CHANGE_TYPES } from '../storage/changes.ts';
import { Entry, problemResponse, StringEnum } from './api.ts';
import { headersOf } from './headers.ts';
import { EXPECTS } from './validator.ts';

/** The most changes one page holds. */
export const MAX_CHANGES_LIMIT = 1000;
/** Changes a page holds unless `limit` says otherwise. */
export const DEFAULT_CHANGES_LIMIT = 100;

const revision = (description: string) =>
  Type.Integer({
    minimum: 0,
    maximum: 999_999_999_999_999,
    description,
    examples: [1234],
    [EXPECTS]: 'a non-negative integer revision (at most 15 digits), such as the status\'s `revision`',
  });

export const Change = Type.Object(
  {
    revision: Type.Integer({ description: 'The revision the change was made at; every change has its own, and they grow.' }),
    type: StringEnum(CHANGE_TYPES, {
      description:
        '`entry.created`, `entry.updated` (its text changed), `entry.restored` (shown again): `entry` holds it. `entry.hidden`, `entry.deleted`: the entry leaves every public answer. ' +
        '`variable.updated`, `variable.deleted`, `emoji.updated`, `emoji.deleted`: read `/api/v1/variables` or `/api/v1/emojis` again.',
    }),
    at: Type.Integer({ description: 'Unix seconds when the change was made.' }),
    key: Type.String({ description: 'The entry\'s UUID, or the variable\'s or emoji\'s name.' }),
    entry: Type.Optional(
      Type.Unsafe<Static<typeof Entry>>({
        ...Entry,
        description:
          'Created, updated and restored entries only: the entry as `GET /api/v1/nonsense/{id}` answered it when the change was made. The raw text is `original_nonsense` when present, else `nonsense`.',
      }),
    ),
  },
  { title: 'Change', additionalProperties: false },
);

export const ChangesPage = Type.Object(
  {
    revision: Type.Integer({ description: 'The current revision, as the status reports it.' }),
    changes: Type.Array(Change, { description: 'The changes after `since`, in revision order; the `Link` header names the next page while more remain.' }),
  },
  { title: 'ChangesPage', additionalProperties: false, headers: headersOf('Link') },
);

export const ChangesQuery = Type.Object({
  since: revision('The revision the copy is at: the status\'s `revision` when the copy was exported, then the last change applied. Only changes after it are listed.'),
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_CHANGES_LIMIT,
      default: DEFAULT_CHANGES_LIMIT,
      description: `Changes per page: ${DEFAULT_CHANGES_LIMIT} unless given, at most ${MAX_CHANGES_LIMIT}.`,
      [EXPECTS]: `an integer from 1 to ${MAX_CHANGES_LIMIT}`,
    }),
  ),
});
export type ChangesQuery = Static<typeof ChangesQuery>;

export const EventsQuery = Type.Object({
  since: Type.Optional(revision('Resume after this revision (as `Last-Event-ID`, which takes precedence). Without either the stream starts with the next change.')),
});
export type EventsQuery = Static<typeof EventsQuery>;

export const EventsHeaders = Type.Object({
  'last-event-id': Type.Optional(
    Type.String({
      pattern: '^[0-9]{1,15}$',
      description: 'Sent by `EventSource` when it reconnects: the `id` of the last event received. The stream resumes after it.',
      [EXPECTS]: 'the id of an event of this stream (a revision, in digits)',
    }),
  ),
});

export const EventStream = Type.String({
  title: 'EventStream',
  contentMediaType: 'text/event-stream',
  description:
    'Server-Sent Events, one per change: `id:` its revision, `event:` its type, `data:` the change as JSON (the `Change` schema). A comment line (`:`) comes at least every 15 s. ' +
    'A stream that resumes from before the retained log gets one `reset` event and ends; a client that falls behind by more than 256 KiB gets one `overflow` event and the stream ends.',
});

/** The 410 of a `since` older than the retained log. */
export const GONE = {
  410: problemResponse(410, 'The log no longer reaches back to `since`: start the copy again from an export (docs/events.md).'),
};
