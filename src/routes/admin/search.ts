/** Admin: finding entries in any state, newest first, for the moderation page. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { encodeCursor, parseCursor } from '../../domain/entry-selection.ts';
import { parseSearchText } from '../../domain/search-text.ts';
import { nextPageLink } from '../../plugins/links.ts';
import { badRequest } from '../../http/problem.ts';
import { AdminEntry, DEFAULT_PAGE_SIZE, EntrySearchQuery, NEXT_PAGE_HEADERS } from '../../schemas/admin.ts';
import { problemResponses } from '../../schemas/api.ts';
import { NEWEST_FIRST } from '../../storage/entry-query.ts';

const adminSearchRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/nonsense',
    {
      schema: {
        summary: 'Find entries in any state',
        description: 'Newest first (timestamp, then uuid, descending), a page at a time: the next page is in the `Link` header.',
        tags: ['admin'],
        querystring: EntrySearchQuery,
        response: { 200: Type.Array(AdminEntry, { description: 'A page of entries', headers: NEXT_PAGE_HEADERS }), ...problemResponses(400) },
      },
    },
    async (request, reply) => {
      const { q = '', state = 'any', limit = DEFAULT_PAGE_SIZE, cursor } = request.query;
      const term = parseSearchText(q);
      if (!term.ok) throw badRequest(term.detail, { parameter: 'q' });
      const after = cursor === undefined ? undefined : parseCursor(cursor);
      if (after === null) throw badRequest('The parameter "cursor" is not one this service gave out; follow the `Link` header of the previous page.', { parameter: 'cursor' });
      // One more than asked tells whether another page exists without a count.
      const query = { filter: { q: term.value, state }, order: NEWEST_FIRST, limit: limit + 1, ...(after ? { after } : {}) };
      // An embedded database file is searched in the worker thread, off the event loop (services/read-workers).
      const found = app.readWorkers ? await app.readWorkers.list(query, { client: app.fairShare.clientOf(request) }) : await app.storage.entryQuery.find(query);
      const entries = found.slice(0, limit);
      if (found.length > limit) reply.header('link', nextPageLink(request, encodeCursor(entries.at(-1)!)));
      return entries;
    },
  );
};

export default adminSearchRoutes;
