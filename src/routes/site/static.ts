/**
 * `GET /static/<file>`: the site's CSS, JS, icon and fonts, from memory, and the faces of other
 * scripts, from their files (web/script-fonts.ts). A link with the file's current `?v=<hash>` may be
 * cached for a year (`immutable`); any other is revalidated by its strong ETag.
 * `GET /favicon.ico`: the same icon as an ICO, for clients that ask for it by that name.
 */
import fs from 'node:fs';
import { Readable } from 'node:stream';
import type { FastifyPluginAsync } from 'fastify';
import { notModified, strongTag } from '../../http/cache.ts';
import { notFound } from '../../http/problem.ts';
import { ASSETS } from '../../web/assets.ts';
import { faviconIco } from '../../web/favicon.ts';
import { pageHeaders } from '../../web/layout.ts';
import { SCRIPT_FONT_TYPE, scriptFont } from '../../web/script-fonts.ts';

const staticRoutes: FastifyPluginAsync = async (app) => {
  app.get('/static/:file', { schema: { hide: true } }, async (request, reply) => {
    const { file } = request.params as { file: string };
    const asset = ASSETS.get(file);
    const font = asset === undefined ? await scriptFont(file) : undefined;
    const hash = asset?.hash ?? font?.hash;
    if (hash === undefined) throw notFound(`There is no static file ${file.slice(0, 60)}.`);
    const versioned = (request.query as Record<string, unknown>).v === hash;
    const cacheControl = versioned ? 'public, max-age=31536000, immutable' : 'public, max-age=300, must-revalidate';
    // An SVG opened directly is a document; the site's policy keeps it from running anything.
    pageHeaders(reply);
    if (notModified(request, reply, strongTag(hash), cacheControl)) return reply;
    if (asset !== undefined) return reply.type(asset.contentType).send(asset.body);
    reply.type(SCRIPT_FONT_TYPE).header('content-length', font!.size);
    // HEAD: no body to read; Fastify keeps the length of a stream's answer.
    return reply.send(request.method === 'HEAD' ? Readable.from([]) : fs.createReadStream(font!.path));
  });

  app.get('/favicon.ico', { schema: { hide: true } }, async (request, reply) => {
    const icon = await faviconIco();
    if (notModified(request, reply, icon.etag, 'public, max-age=86400')) return reply;
    return reply.type('image/x-icon').send(icon.body);
  });
};

export default staticRoutes;
