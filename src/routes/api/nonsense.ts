/** Public entry endpoints: random, status and by UUID. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { parseUuid } from '../../domain/uuid.ts';
import { mathRandomPick } from '../../domain/variables.ts';
import { deliverEntry } from '../../formats/entry.ts';
import { notModified, revisionTag } from '../../plugins/http-cache.ts';
import { badRequest, notFound } from '../../plugins/problem.ts';
import { Entry, EntryPathParams, problemResponses, Status } from '../../schemas/api.ts';
import { sendShareImage } from './share-image.ts';

const ShareImage = Type.Unsafe<Buffer>({ type: 'string', format: 'binary' });

const nonsenseRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { entries, variables, cache } = app.storage;

  app.get(
    '/nonsense/random',
    {
      schema: {
        summary: 'One random entry',
        description: 'Uniform over visible entries. Never cached (`Cache-Control: no-store`).',
        tags: ['entries'],
        response: { 200: Entry, ...problemResponses(404) },
      },
    },
    async (_request, reply) => {
      const entry = await entries.random(mathRandomPick);
      if (entry === null) throw notFound('The database has no entries yet. Add some with the admin API or `nonsense import`.');
      reply.header('cache-control', 'no-store');
      return deliverEntry(entry, await variables.values());
    },
  );

  app.get(
    '/nonsense/status',
    {
      schema: {
        summary: 'Status of the database',
        description: 'For clients that cache the database: `revision` grows with every change.',
        tags: ['entries'],
        response: { 200: Status },
      },
    },
    async (request, reply) => {
      const status = await entries.status();
      if (notModified(request, reply, revisionTag(status.revision), 'no-cache')) return reply;
      return status;
    },
  );

  app.get(
    '/nonsense/:id',
    {
      schema: {
        summary: 'One entry by UUID, or its share image',
        description:
          'With `.png` after the UUID: the share image, a 1200×630 PNG card of the entry (`Cache-Control: public, max-age=86400`). ' +
          'Other extensions are 404: share images exist as PNG only.',
        tags: ['entries'],
        params: EntryPathParams,
        response: {
          200: {
            description: 'The entry, or with `.png` its share image',
            content: { 'application/json': { schema: Entry }, 'image/png': { schema: ShareImage } },
          },
          ...problemResponses(400, 404),
        },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const dot = id.indexOf('.');
      const uuid = parseUuid(dot === -1 ? id : id.slice(0, dot));
      if (uuid === null) {
        throw badRequest(`"${truncate(dot === -1 ? id : id.slice(0, dot))}" is not a UUID; expected the form 6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11.`);
      }
      if (dot !== -1) {
        if (id.slice(dot + 1) === 'png') return sendShareImage(request, reply, uuid);
        throw notFound(`Share images exist as PNG only: use /api/v1/nonsense/${uuid}.png.`);
      }
      const entry = await entries.findVisible(uuid);
      if (entry === null) throw notFound(`No entry has the UUID ${uuid}.`);
      if (notModified(request, reply, revisionTag(await cache.current()), 'no-cache')) return reply;
      return deliverEntry(entry, await variables.values());
    },
  );
};

function truncate(value: string): string {
  return value.length > 60 ? `${value.slice(0, 57)}...` : value;
}

export default nonsenseRoutes;
