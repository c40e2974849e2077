/**
 * The share image of an entry (`GET /api/v1/nonsense/<uuid>.png`, contract section 7): a 1200×630
 * PNG card. Rendering costs 0.1–0.4 s, so cards are kept in memory by a key covering everything that
 * shapes their pixels, concurrent requests for one card share one render, and only a few renders run
 * at once.
 */
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CARD_DESIGN_VERSION, renderShareImage, type CustomEmojiImage } from '../../formats/share-image/render.ts';
import { cardText, customEmojiNames } from '../../formats/share-image/text.ts';
import { shareImageCache, shareImageRender } from '../../metrics/registry.ts';
import { notModified } from '../../plugins/http-cache.ts';
import { notFound } from '../../plugins/problem.ts';
import type { EntryRecord } from '../../storage/entries.ts';
import type { EmojiInfo } from '../../storage/emojis.ts';
import type { Storage } from '../../storage/index.ts';

export const SHARE_IMAGE_CACHE_CONTROL = 'public, max-age=86400';

/** What a card shows, and the key that identifies its bytes. */
export interface ShareCard {
  /** The text as the card shows it (cardText). */
  text: string;
  /** The custom emojis the text uses, with their image hashes. */
  emojis: EmojiInfo[];
  /** A hash of everything that shapes the card's pixels: design version, text, emoji images, service name. */
  key: string;
}

/** shareCardOf works out what the card of a visible entry shows; the share page uses it too. */
export async function shareCardOf(storage: Storage, entry: EntryRecord, appName: string): Promise<ShareCard> {
  const text = cardText(entry.text, await storage.variables.values(), entry.uuid, appName);
  const known = new Map((await storage.emojis.list()).map((emoji) => [emoji.name, emoji]));
  const emojis = customEmojiNames(text, (name) => known.has(name)).map((name) => known.get(name)!);
  const key = createHash('sha256')
    .update(JSON.stringify([CARD_DESIGN_VERSION, entry.uuid, entry.text, text, appName, emojis.map((e) => [e.name, e.contentType, e.sha256])]))
    .digest('hex');
  return { text, emojis, key };
}

/**
 * sendShareImage answers the share image of the entry `uuid` (already validated and lower-case):
 * 404 when no visible entry has it, 304 when the client's copy is current, else the PNG.
 */
export async function sendShareImage(request: FastifyRequest, reply: FastifyReply, uuid: string): Promise<FastifyReply> {
  const { storage, config } = request.server;
  const entry = await storage.entries.findVisible(uuid);
  if (entry === null) throw notFound(`No entry has the UUID ${uuid}.`);
  const card = await shareCardOf(storage, entry, config.appName);
  if (notModified(request, reply, `"${card.key.slice(0, 32)}"`, SHARE_IMAGE_CACHE_CONTROL)) return reply;
  const png = await cards.get(card.key, async () => {
    const images = new Map<string, CustomEmojiImage>();
    for (const { name } of card.emojis) {
      const emoji = await storage.emojis.find(name);
      // Deleted since the list was read: the card shows `:name:` as text, like any unknown name.
      if (emoji !== null) images.set(name, { contentType: emoji.contentType, image: emoji.image });
    }
    return renderShareImage({ text: card.text, emojis: images, appName: config.appName });
  });
  return reply.type('image/png').send(png);
}

/**
 * CardCache keeps recently rendered cards (least recently used out first, bounded by count and
 * bytes), joins concurrent requests for the same card, and lets only `concurrency` renders run at
 * once so a burst of new cards cannot take all the CPU and memory.
 */
export class CardCache {
  private readonly done = new Map<string, Buffer>();
  private readonly pending = new Map<string, Promise<Buffer>>();
  private readonly waiting: (() => void)[] = [];
  private bytes = 0;
  private running = 0;

  constructor(
    private readonly maxEntries = 200,
    private readonly maxBytes = 64 * 1024 * 1024,
    private readonly concurrency = 2,
  ) {}

  /** get returns the cached card for `key`, or renders it with `render` (once, however many ask). */
  async get(key: string, render: () => Promise<Buffer>): Promise<Buffer> {
    const hit = this.done.get(key);
    if (hit !== undefined) {
      this.done.delete(key);
      this.done.set(key, hit);
      shareImageCache.inc({ result: 'hit' });
      return hit;
    }
    let pending = this.pending.get(key);
    if (pending !== undefined) shareImageCache.inc({ result: 'joined' });
    else {
      shareImageCache.inc({ result: 'miss' });
      pending = this.limited(async () => {
        const stop = shareImageRender.startTimer();
        try {
          return await render();
        } finally {
          stop();
        }
      }).then(
        (png) => {
          this.pending.delete(key);
          this.store(key, png);
          return png;
        },
        (error: unknown) => {
          this.pending.delete(key);
          throw error;
        },
      );
      this.pending.set(key, pending);
    }
    return pending;
  }

  /** The number of cards held. */
  get size(): number {
    return this.done.size;
  }

  private store(key: string, png: Buffer): void {
    if (png.length > this.maxBytes) return;
    this.done.set(key, png);
    this.bytes += png.length;
    for (const [oldest, old] of this.done) {
      if (this.done.size <= this.maxEntries && this.bytes <= this.maxBytes) break;
      this.done.delete(oldest);
      this.bytes -= old.length;
    }
  }

  private async limited<T>(task: () => Promise<T>): Promise<T> {
    // A finishing render hands its slot straight to the next in line, so none can jump the queue.
    if (this.running < this.concurrency) this.running++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next === undefined) this.running--;
      else next();
    }
  }
}

// One per process: the key covers every input of a card, so apps in one process can share it.
const cards = new CardCache();
