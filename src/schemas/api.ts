/**
 * The response and request schemas of `/api/v1`. They validate requests, drive the fast JSON
 * serialiser, and are the OpenAPI document: one definition for all three.
 */
import { Type, type Static } from 'typebox';

const uuid = Type.String({ format: 'uuid', description: 'Lower-case UUID.', examples: ['6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11'] });

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
    name: Type.String({ pattern: '^[a-z0-9_]{2,32}$' }),
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

export const Problem = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
  },
  { title: 'Problem', description: 'RFC 9457 problem details (`application/problem+json`).', additionalProperties: true },
);

/** problemResponses documents error statuses of a route, each as problem+json. */
export function problemResponses(...statuses: number[]): Record<number, unknown> {
  return Object.fromEntries(
    statuses.map((status) => [status, { description: 'Problem details', content: { 'application/problem+json': { schema: Problem } } }]),
  );
}

export const EntryPathParams = Type.Object({
  id: Type.String({ description: 'The entry UUID (any case).', maxLength: 100 }),
});

export const EmojiImageParams = Type.Object({
  file: Type.String({ description: 'The emoji name followed by its image extension, e.g. `blobcat.png`.', maxLength: 100 }),
});
