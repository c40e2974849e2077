/**
 * The share image of an entry (`GET /api/v1/nonsense/<uuid>.png`, docs/share-image.md): a 1200×630
 * PNG card from the card service (src/services/cards/): cached in memory, drawn in render workers,
 * one render for concurrent requests for the same card, refused with 503 when the pool is full, and
 * with 503 while a failed render of the card is remembered (CardUnavailable).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { uuidSegment } from '../../domain/uuid.ts';
import { notModified, strongTag } from '../../http/cache.ts';
import { notFound } from '../../http/problem.ts';
import { sendProblem } from '../../plugins/send-problem.ts';
import { CardUnavailable, RenderAborted } from '../../services/cards/index.ts';

import { EntryPathParams, NOT_MODIFIED, problemResponses } from '../../schemas/api.ts';

export const SHARE_IMAGE_CACHE_CONTROL = 'public, max-age=86400';

const ShareImage = Type.Unsafe<Buffer>({ type: 'string', contentMediaType: 'image/png', description: 'A 1200×630 PNG.' });

const shareImageRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/nonsense/:id.png',
    {
      schema: {
        summary: "An entry's share image",
        description:
          'A 1200×630 PNG card of the entry (the Open Graph size): the same entry version always gives the same bytes. ' +
          '`ETag` and `Cache-Control: public, max-age=86400`. Rate-limited per address (RATE_LIMIT_IMAGE).',
        tags: ['entries'],
        params: EntryPathParams,
        response: {
          200: { description: 'The share image', content: { 'image/png': { schema: ShareImage } } },
          ...NOT_MODIFIED,
          ...problemResponses(400, 404),
        },
      },
    },
    async (request, reply) => {
      // `<uuid>.png.png` reaches this route with the segment `<uuid>.png`: no such image either.
      const { uuid, extension } = uuidSegment(request.params.id);
      if (extension !== '') throw notFound(`Share images exist as PNG only: use /api/v1/nonsense/${uuid}.png.`);
      return sendShareImage(request, reply, uuid);
    },
  );
};

export default shareImageRoutes;

/**
 * sendShareImage answers the share image of the entry `uuid` (already validated and lower-case):
 * 404 when no visible entry has it, 304 when the client's copy is current, else the PNG.
 *
 * HEAD answers as GET, with the card's length: a card not yet drawn is drawn into the cache, where the
 * GET that usually follows finds it, so a HEAD and its GET cost one render.
 */
async function sendShareImage(request: FastifyRequest, reply: FastifyReply, uuid: string): Promise<FastifyReply> {
  const { storage, cards, entryService } = request.server;
  const entry = await entryService.findEntry(uuid);
  if (entry === null) throw notFound(`No entry has the UUID ${uuid}.`);
  const card = await cards.describe(storage, entry);
  if (notModified(request, reply, strongTag(card.key.slice(0, 32)), SHARE_IMAGE_CACHE_CONTROL)) return reply;
  const cached = cards.cached(card);
  if (cached !== undefined) return reply.type('image/png').send(cached);
  // A card whose render failed lately is refused at once, HEAD included, without drawing it again.
  const failed = cards.failure(card);
  if (failed !== undefined) return sendUnavailable(reply, failed);
  reply.type('image/png');
  // The client hanging up before the card is done stops waiting for it (and the render, when nobody else waits).
  const gone = new AbortController();
  const onClose = () => {
    if (!reply.raw.writableFinished) gone.abort();
  };
  reply.raw.once('close', onClose);
  try {
    return reply.send(await cards.png(storage, card, gone.signal));
  } catch (error) {
    if (error instanceof CardUnavailable) {
      // Logged where the render itself failed; a failure answered from memory has no cause of its own.
      if (error.cause !== undefined) {
        const log = error.reason === 'error' ? request.log.error.bind(request.log) : request.log.warn.bind(request.log);
        log({ reqId: request.id, url: request.url, reason: error.reason, err: error.cause }, 'share image not drawn');
      }
      return sendUnavailable(reply, error);
    }
    // Nobody is left to read an answer; 499 (client closed the request) keeps it apart in logs and metrics.
    if (error instanceof RenderAborted) return reply.code(499).send();
    throw error;
  } finally {
    reply.raw.off('close', onClose);
  }
}

/** sendUnavailable answers 503 for a card whose render failed, with when it will be tried again. */
function sendUnavailable(reply: FastifyReply, error: CardUnavailable): FastifyReply {
  reply.removeHeader('etag');
  reply.header('retry-after', String(error.retryAfterSeconds)).header('cache-control', 'no-store');
  return sendProblem(reply, 503, `${error.message.replace(/\.$/, '')}; it is not tried again for ${error.retryAfterSeconds} s.`);
}
