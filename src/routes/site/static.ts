/**
 * `GET /static/<file>`: the site's CSS, JS, icon and fonts, from memory. A link with the file's current
 * `?v=<hash>` may be cached for a year (`immutable`); any other is revalidated by its strong ETag.
 * `GET /favicon.ico`: the same icon as an ICO, for clients that ask for it by that name.
 */
import type { FastifyPluginAsync } from 'fastify';
import { notModified } from '../../plugins/http-cache.ts';
import { notFound } from '../../plugins/problem.ts';
import { ASSETS } from '../../web/assets.ts';
import { faviconIco } from '../../web/favicon.ts';
import { pageHeaders } from '../../web/layout.ts';

const staticRoutes: FastifyPluginAsync = async (app) => {
  app.get('/static/:file', { schema: { hide: true } }, async (request, reply) => {
    const { file } = request.params as { file: string };
    const asset = ASSETS.get(file);
    if (asset === undefined) throw notFound(`There is no static file ${file.slice(0, 60)}.`);
    const versioned = (request.query as Record<string, unknown>).v === asset.hash;
    const cacheControl = versioned ? 'public, max-age=31536000, immutable' : 'public, max-age=300, must-revalidate';
    // An SVG opened directly is a document; the site's policy keeps it from running anything.
    pageHeaders(reply);
    if (notModified(request, reply, `"${asset.hash}"`, cacheControl)) return reply;
    return reply.type(asset.contentType).send(asset.body);
  });

  app.get('/favicon.ico', { schema: { hide: true } }, async (request, reply) => {
    const icon = await faviconIco();
    if (notModified(request, reply, icon.etag, 'public, max-age=86400')) return reply;
    return reply.type('image/x-icon').send(icon.body);
  });
};

export default staticRoutes;
