/** `GET /api/v1/nonsense`: the database (or a filtered part) as CSV, JSON or TXT, streamed. */
import { createHash } from 'node:crypto';
import { Socket } from 'node:net';
import { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { exportSelection } from '../../domain/export-params.ts';
import { EXPORT_CONTENT_TYPES, exportPageSize, readAhead, serializeExport } from '../../formats/export.ts';
import { notModified, revisionTag } from '../../http/cache.ts';
import { badRequest } from '../../http/problem.ts';
import { ExportCsv, ExportQuery, ExportTxt, Entries, NOT_MODIFIED, problemResponses } from '../../schemas/api.ts';
import { headersOf } from '../../schemas/headers.ts';

const exportRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { entryQuery, variables, cache } = app.storage;
  // The embedded database's exports are read and written off the event loop (services/read-workers).
  const workers = app.readWorkers;

  app.get(
    '/nonsense',
    {
      config: { heavy: true },
      schema: {
        summary: 'Export the database',
        description:
          'Visible entries matching every given filter, ordered by timestamp then uuid, as a download. ' +
          'CSV columns: uuid, nonsense, original_nonsense, timestamp (RFC 4180, formula-safe). JSON: an array of entries. ' +
          'TXT: one delivered text per line, single-line entries only.',
        tags: ['entries'],
        querystring: ExportQuery,
        response: {
          200: {
            description: 'The export file, as `Content-Disposition: attachment; filename="nonsense.<format>"`',
            headers: headersOf('Content-Disposition'),
            content: { 'text/csv': { schema: ExportCsv }, 'application/json': { schema: Entries }, 'text/plain': { schema: ExportTxt } },
          },
          ...NOT_MODIFIED,
          ...problemResponses(400),
        },
      },
    },
    async (request, reply) => {
      // The schema checked the parameters (as for `nonsense export`); the search term has rules of its own.
      const parsed = exportSelection(request.query);
      if (!parsed.ok) throw badRequest(parsed.detail, { parameter: parsed.parameter });
      const { format, filter } = parsed.value;
      // Every parameter is checked above, and the first page read below, before the first byte is sent.
      const tag = createHash('sha256').update(JSON.stringify([format, filter])).digest('base64url').slice(0, 16);
      if (notModified(request, reply, revisionTag(await cache.current(), tag), 'no-cache')) return reply;
      const values = await variables.values();
      // The pages may travel in shared slots only when they go straight to a socket (not `inject`,
      // whose response keeps every chunk it is given): services/read-workers/page-slots.ts.
      const pending = request.raw.socket instanceof Socket ? () => reply.raw.writableLength : undefined;
      // A HEAD reads the first page too, so it fails where its GET would; the stream is closed unread
      // (plugins/head.ts).
      const chunks = workers
        ? await workers.open(format, filter, exportPageSize, values, { pending, client: app.fairShare.clientOf(request) })
        : serializeExport(format, await readAhead(entryQuery.pages(filter, exportPageSize)), values);
      reply
        .type(EXPORT_CONTENT_TYPES[format])
        .header('content-disposition', `attachment; filename="nonsense.${format}"`);
      // A stream of the bytes the response schemas describe (not an object for the serialiser). One
      // page waits in it at most (Readable.from's default is 16), so a client reading slowly holds one
      // page of memory, not sixteen; the export worker has the next one ready meanwhile.
      return reply.send(Readable.from(chunks, { highWaterMark: 1 }) as never);
    },
  );
};

export default exportRoutes;
