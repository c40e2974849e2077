/** `GET /api/v1/nonsense/galaxy`: every visible entry as a star of the stored 3D layout, as CSV or JSON. */
import { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type TSchema } from 'typebox';
import { GALAXY_CONTENT_TYPES, GALAXY_FORMATS } from '../../formats/galaxy.ts';
import { watchCache } from '../../metrics/registry.ts';
import { notModified, strongTag } from '../../http/cache.ts';
import { HttpProblem } from '../../http/problem.ts';
import { GalaxyPoint, problemResponses } from '../../schemas/api.ts';
import { GalaxyBodies } from '../../services/galaxy/serve.ts';

/** What a client is asked to wait before the first layout exists. */
const FIRST_LAYOUT_RETRY_AFTER_S = 10;

const GalaxyQuery = Type.Object({
  format: Type.Optional(Type.Enum(GALAXY_FORMATS, { description: '`csv` (default) or `json`.' })),
});

/** The documented shape of a body the handler sends as bytes or a stream. */
const Body = (schema: TSchema) => Type.Unsafe<Buffer | Readable>(schema);

const galaxyRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { galaxy, cache } = app.storage;
  // The stored answer is streamed from the database; only what changed since it was written is held.
  const bodies = new GalaxyBodies(galaxy, () => cache.current(), app.config.galaxyCacheBytes);
  const unwatch = watchCache('galaxy', () => ({ bytes: bodies.bytes, items: bodies.stars }));
  app.addHook('onClose', async () => unwatch());

  app.get(
    '/nonsense/galaxy',
    {
      config: { heavy: true },
      schema: {
        summary: 'The galaxy: every entry as a star',
        description:
          'One star per visible entry: its place in a seeded 3D UMAP layout of the texts (similar texts close together), ' +
          'centred on zero, the central 98% spanning 16 units per axis and every star within ±10, and a `point_size` that ' +
          'grows with the logarithm of the length of the text: 0.146 for one character, about 0.22 for a word (0.218 for five ' +
          'characters), 0.47 for 280 and 0.6 for the longest (see docs/galaxy.md). CSV (default) with the header ' +
          '`uuid,umap_dim_0,umap_dim_1,umap_dim_2,point_size`, CRLF between lines and no line break after the last record, ' +
          'or with `format=json` an array of objects with the same fields. ' +
          'The layout is computed in the background; new entries join it within seconds. Before the first layout exists: 503 ' +
          'with `Retry-After`. The `ETag` follows the layout and the entries: revalidate with `If-None-Match`.',
        tags: ['entries'],
        querystring: GalaxyQuery,
        response: {
          200: {
            description: 'The stars',
            content: {
              'text/csv': { schema: Body(Type.String({ description: 'uuid,umap_dim_0,umap_dim_1,umap_dim_2,point_size' })) },
              'application/json': { schema: Body(Type.Array(GalaxyPoint)) },
            },
          },
          304: { description: 'Not modified (`If-None-Match`)', type: 'null' },
          ...problemResponses(400, 503),
        },
      },
    },
    async (request, reply) => {
      const format = request.query.format ?? 'csv';
      const layout = await galaxy.current();
      if (layout === null) {
        throw new HttpProblem(
          503,
          'The galaxy has not been laid out yet. The server computes it in the background after it starts (or run `nonsense galaxy`); ' +
            `try again in ${FIRST_LAYOUT_RETRY_AFTER_S} s.`,
          {},
          { 'retry-after': String(FIRST_LAYOUT_RETRY_AFTER_S) },
        );
      }
      // The layout's revision and version say which stars and where; the entries' revision, which of
      // them are still visible.
      const view = await bodies.view(layout);
      if (notModified(request, reply, strongTag(`${view.tag}-${format}`), 'no-cache')) return reply;
      reply.type(GALAXY_CONTENT_TYPES[format]);
      const body = await view.body(format);
      // A HEAD would read a streamed body to its end only to throw it away.
      if (request.method === 'HEAD' && body instanceof Readable) {
        body.destroy();
        return reply.send(Readable.from([]));
      }
      return reply.send(body);
    },
  );
};

export default galaxyRoutes;
