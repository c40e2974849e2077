/** Admin: finding entries in any state, newest first, for the moderation page. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { parseUuid } from '../../domain/uuid.ts';
import { badRequest } from '../../plugins/problem.ts';
import { problemResponses } from '../../schemas/api.ts';
import { AdminEntry } from './entries.ts';

const MAX_TERM_LENGTH = 200;

const SearchQuery = Type.Object({
  q: Type.Optional(Type.String({ description: 'Case-insensitive substring of the raw text (at most 200 characters). Empty: any.' })),
  state: Type.Optional(Type.String({ description: '`visible` or `hidden`; absent or empty: both.' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
  before: Type.Optional(Type.String({ description: 'The `next` of the previous page: continue after its last entry.' })),
});

const SearchResult = Type.Object(
  {
    entries: Type.Array(AdminEntry),
    next: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `before` for the next page; null on the last page.' }),
  },
  { title: 'AdminEntrySearch' },
);

/** A page position: `<timestamp>.<uuid>` of the last entry shown. */
function parseBefore(raw: string): { timestamp: number; uuid: string } {
  const match = /^(\d{1,15})\.(.+)$/.exec(raw);
  const uuid = match ? parseUuid(match[2]!) : null;
  if (match === null || uuid === null) throw badRequest('The parameter "before" must be the "next" value of a previous page.');
  return { timestamp: Number(match[1]), uuid };
}

const adminSearchRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/nonsense',
    {
      schema: {
        summary: 'Find entries in any state',
        description: 'Newest first (timestamp, then uuid, descending). Page with `before` = the previous answer\'s `next`.',
        tags: ['admin'],
        querystring: SearchQuery,
        response: { 200: SearchResult, ...problemResponses(400, 401) },
      },
    },
    async (request) => {
      const { q = '', state = '', limit = 50, before } = request.query;
      if ([...q].length > MAX_TERM_LENGTH) throw badRequest(`The parameter "q" has ${[...q].length} characters; at most ${MAX_TERM_LENGTH} are allowed.`);
      if (state !== '' && state !== 'visible' && state !== 'hidden') throw badRequest('The parameter "state" must be visible or hidden.');
      // One more than asked tells whether another page exists without a count.
      const found = await app.storage.entries.search({
        q: q.trim(),
        ...(state !== '' ? { state } : {}),
        limit: limit + 1,
        ...(before !== undefined && before !== '' ? { before: parseBefore(before) } : {}),
      });
      const entries = found.slice(0, limit);
      const last = entries.at(-1);
      return { entries, next: found.length > limit && last !== undefined ? `${last.timestamp}.${last.uuid}` : null };
    },
  );
};

export default adminSearchRoutes;
