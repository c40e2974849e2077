/** `GET /api/v1/nonsense`: the database (or a filtered part) as CSV, JSON or TXT, streamed. */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { parseExportParams } from '../../domain/export-params.ts';
import { EXPORT_CONTENT_TYPES, serializeExport } from '../../formats/export.ts';
import { notModified } from '../../plugins/http-cache.ts';
import { badRequest } from '../../plugins/problem.ts';
import { problemResponses } from '../../schemas/api.ts';

const ExportQuery = Type.Object({
  q: Type.Optional(Type.String({ description: 'Case-insensitive substring of the raw text (at most 200 characters). Empty: no filter.' })),
  format: Type.Optional(Type.String({ description: '`csv` (default), `json` or `txt`.', examples: ['csv', 'json', 'txt'] })),
  after: Type.Optional(Type.String({ description: 'Only entries with timestamp > after (Unix seconds).' })),
  before: Type.Optional(Type.String({ description: 'Only entries with timestamp < before (Unix seconds).' })),
});

const File = Type.Unsafe<Readable>({ type: 'string' });

const exportRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { entryQuery, variables, cache } = app.storage;

  app.get(
    '/nonsense',
    {
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
            description: 'The export file',
            content: Object.fromEntries(Object.values(EXPORT_CONTENT_TYPES).map((type) => [type.split(';')[0], { schema: File }])),
          },
          ...problemResponses(400),
        },
      },
      // The schema documents the parameters; parseExportParams checks them (shared with the command
      // line), with messages that name the parameter and what it accepts.
      validatorCompiler: () => () => true,
    },
    async (request, reply) => {
      const parsed = parseExportParams(request.query as Record<string, unknown>);
      if (!parsed.ok) throw badRequest(parsed.detail, { parameter: parsed.parameter });
      const { format, filter } = parsed.value;
      const tag = createHash('sha256').update(JSON.stringify([format, filter])).digest('base64url').slice(0, 16);
      if (notModified(request, reply, `W/"r${await cache.current()}-${tag}"`, 'no-cache')) return reply;
      reply
        .type(EXPORT_CONTENT_TYPES[format])
        .header('content-disposition', `attachment; filename="nonsense.${format}"`);
      if (request.method === 'HEAD') return reply.send('');
      const chunks = serializeExport(format, entryQuery.pages(filter), await variables.values());
      return reply.send(Readable.from(chunks));
    },
  );
};

export default exportRoutes;
