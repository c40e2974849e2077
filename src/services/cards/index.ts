/**
 * The share cards service: what a card shows, the in-memory card cache in front of the render pool,
 * one render for any number of concurrent requests for the same card, and a memory of the cards whose
 * render failed, so that a card that cannot be drawn costs one render in FAILURE_MEMORY_MS, not one a
 * request. Built at start (server.ts, the test helper) and given to the app; it owns worker threads,
 * so its owner closes it.
 */
import { createHash } from 'node:crypto';
import type { Config } from '../../config.ts';
import { CARD_DESIGN_VERSION } from '../../formats/share-image/card.ts';
import type { CustomEmojiImage } from '../../formats/share-image/render.ts';
import { displayText } from '../../domain/display-text.ts';
import { customEmojiNames } from '../../domain/emojis.ts';
import { shareImageCache, watchCards } from '../../metrics/registry.ts';
import type { EntryRecord } from '../../domain/records.ts';
import type { EmojiInfo } from '../../storage/emojis.ts';
import type { Storage } from '../../storage/index.ts';
import { CardCache } from './cache.ts';
import { RenderAborted, RenderFailed, RenderPool, RenderTimedOut, type PoolStats } from './pool.ts';

export { CardQueueFull, RenderAborted } from './pool.ts';

/**
 * How long a card whose render failed (time limit, worker out of memory, any error of the worker) is
 * answered 503 without being drawn again. Its key covers the entry's version, so an edited entry is
 * tried afresh at once.
 */
export const FAILURE_MEMORY_MS = 10 * 60_000;
/** Failed cards remembered at most (about 150 bytes each); beyond, the oldest are forgotten first. */
const MAX_FAILURES = 10_000;

/** The error a card is refused with when its render failed, now or within FAILURE_MEMORY_MS. */
export class CardUnavailable extends Error {
  constructor(
    readonly reason: 'timeout' | 'memory' | 'error',
    readonly retryAfterSeconds: number,
    /** The render's own error when this request's render failed; undefined for a remembered failure. */
    cause?: unknown,
  ) {
    super(
      reason === 'timeout'
        ? 'This share image could not be drawn within the time allowed.'
        : reason === 'memory'
          ? 'This share image could not be drawn within the memory allowed.'
          : 'This share image could not be drawn.',
      cause === undefined ? undefined : { cause },
    );
    this.name = 'CardUnavailable';
  }
}

/** What a card shows, and the key that identifies its bytes. */
export interface ShareCard {
  /** The text as the card shows it (displayText). */
  text: string;
  /** The custom emojis the text uses, with their image hashes. */
  emojis: EmojiInfo[];
  /** A hash of everything that shapes the card's pixels: design version, text, emoji images, service name. */
  key: string;
}

/** shareCardOf works out what the card of a visible entry shows, without drawing it; the share page uses it too. */
export async function shareCardOf(storage: Storage, entry: EntryRecord, appName: string): Promise<ShareCard> {
  const text = displayText(entry.text, await storage.variables.values(), entry.uuid, appName);
  // Asked on every request for a card, cached or not: a text without a colon has no emoji to look up.
  const known = text.includes(':') ? new Map((await storage.emojis.list()).map((emoji) => [emoji.name, emoji])) : new Map<string, EmojiInfo>();
  const emojis = known.size === 0 ? [] : customEmojiNames(text, (name) => known.has(name)).map((name) => known.get(name)!);
  const key = createHash('sha256')
    .update(JSON.stringify([CARD_DESIGN_VERSION, entry.uuid, entry.text, text, appName, emojis.map((e) => [e.name, e.contentType, e.sha256])]))
    .digest('hex');
  return { text, emojis, key };
}

export interface CardServiceOptions {
  appName: string;
  /** Byte budget of the card cache. */
  cacheBytes: number;
  /** Render worker threads. */
  threads: number;
  /** Renders that may wait for a thread. */
  maxQueue: number;
  /** Wall time a render may take once it has a thread, in ms (default: the pool's, 10 s). */
  timeoutMs?: number;
}

interface Pending {
  promise: Promise<Buffer>;
  controller: AbortController;
  waiters: number;
}

export class CardService {
  readonly cache: CardCache;
  private readonly pool: RenderPool;
  private readonly pending = new Map<string, Pending>();
  /** Card keys whose render failed, with when that is forgotten (Date.now() ms), oldest first. */
  private readonly failures = new Map<string, { reason: CardUnavailable['reason']; until: number }>();
  private readonly unwatch: () => void;

  constructor(private readonly options: CardServiceOptions) {
    this.cache = new CardCache(options.cacheBytes);
    this.pool = new RenderPool({ threads: options.threads, maxQueue: options.maxQueue, ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }) });
    this.unwatch = watchCards(() => ({ cacheBytes: this.cache.bytes, cacheCards: this.cache.size, ...this.pool.stats }));
  }

  /** describe works out what the card of a visible entry shows, and its key (see shareCardOf). */
  describe(storage: Storage, entry: EntryRecord): Promise<ShareCard> {
    return shareCardOf(storage, entry, this.options.appName);
  }

  /** cached returns the card's PNG when it is in the cache (a hit), without rendering anything. */
  cached(card: ShareCard): Buffer | undefined {
    const hit = this.cache.get(card.key);
    if (hit !== undefined) shareImageCache.inc({ result: 'hit' });
    return hit;
  }

  /** failure returns the error a card is refused with while its failed render is remembered, else undefined. */
  failure(card: ShareCard): CardUnavailable | undefined {
    this.forgetExpired();
    const failed = this.failures.get(card.key);
    return failed === undefined ? undefined : new CardUnavailable(failed.reason, Math.max(1, Math.ceil((failed.until - Date.now()) / 1000)));
  }

  /**
   * png returns the card's PNG: from the cache, from a render already running for it, or from a new
   * render in the pool. When `signal` aborts, this caller stops waiting (RenderAborted), and the
   * render stops too once no caller waits for it. Rejects with CardQueueFull when the pool is full,
   * and with CardUnavailable when the render fails or failed within FAILURE_MEMORY_MS.
   */
  async png(storage: Storage, card: ShareCard, signal?: AbortSignal): Promise<Buffer> {
    const hit = this.cache.get(card.key);
    if (hit !== undefined) {
      shareImageCache.inc({ result: 'hit' });
      return hit;
    }
    const failed = this.failure(card);
    if (failed !== undefined) throw failed;
    let pending = this.pending.get(card.key);
    if (pending !== undefined) shareImageCache.inc({ result: 'joined' });
    else {
      shareImageCache.inc({ result: 'miss' });
      pending = this.start(storage, card);
    }
    return this.join(card.key, pending, signal);
  }

  /** close stops the render workers; renders still waiting are refused. */
  async close(): Promise<void> {
    this.unwatch();
    await this.pool.close();
  }

  /** memory reports what a render worker holds (for measurements). */
  workerMemory(): ReturnType<RenderPool['memory']> {
    return this.pool.memory();
  }

  get stats(): PoolStats & { cacheBytes: number; cacheCards: number; failedCards: number } {
    this.forgetExpired();
    return { ...this.pool.stats, cacheBytes: this.cache.bytes, cacheCards: this.cache.size, failedCards: this.failures.size };
  }

  /** remember keeps a card's failure for FAILURE_MEMORY_MS and returns the error its callers get. */
  private remember(key: string, error: RenderTimedOut | RenderFailed): CardUnavailable {
    const reason = error instanceof RenderTimedOut ? 'timeout' : error.outOfMemory ? 'memory' : 'error';
    this.failures.delete(key);
    this.failures.set(key, { reason, until: Date.now() + FAILURE_MEMORY_MS });
    for (const oldest of this.failures.keys()) {
      if (this.failures.size <= MAX_FAILURES) break;
      this.failures.delete(oldest);
    }
    return new CardUnavailable(reason, FAILURE_MEMORY_MS / 1000, error);
  }

  /** forgetExpired drops the failures whose time is up: every entry has the same lifetime, so they are the first ones. */
  private forgetExpired(): void {
    const now = Date.now();
    for (const [key, { until }] of this.failures) {
      if (until > now) break;
      this.failures.delete(key);
    }
  }

  private start(storage: Storage, card: ShareCard): Pending {
    const controller = new AbortController();
    const forget = () => {
      if (this.pending.get(card.key)?.promise === promise) this.pending.delete(card.key);
    };
    const promise = this.render(storage, card, controller.signal).then(
      (png) => {
        forget();
        this.cache.set(card.key, png);
        return png;
      },
      (error: unknown) => {
        forget();
        throw error instanceof RenderTimedOut || error instanceof RenderFailed ? this.remember(card.key, error) : error;
      },
    );
    // Nobody may be left to hear a failure (all callers gone); it must not be an unhandled rejection.
    promise.catch(() => {});
    const pending: Pending = { promise, controller, waiters: 0 };
    this.pending.set(card.key, pending);
    return pending;
  }

  private async render(storage: Storage, card: ShareCard, signal: AbortSignal): Promise<Buffer> {
    const emojis = new Map<string, CustomEmojiImage>();
    for (const { name } of card.emojis) {
      const emoji = await storage.emojis.find(name);
      // Deleted since the list was read: the card shows `:name:` as text, like any unknown name.
      if (emoji !== null) emojis.set(name, { contentType: emoji.contentType, image: emoji.image });
    }
    return this.pool.render({ text: card.text, emojis, appName: this.options.appName }, signal);
  }

  private join(key: string, pending: Pending, signal: AbortSignal | undefined): Promise<Buffer> {
    if (signal === undefined) {
      pending.waiters++;
      return pending.promise;
    }
    if (signal.aborted) return Promise.reject(new RenderAborted());
    pending.waiters++;
    return new Promise<Buffer>((resolve, reject) => {
      const onAbort = () => {
        reject(new RenderAborted());
        // The last caller gone: stop the render, and let the next request for this card start afresh.
        if (--pending.waiters === 0) {
          if (this.pending.get(key) === pending) this.pending.delete(key);
          pending.controller.abort();
        }
      };
      signal.addEventListener('abort', onAbort, { once: true });
      pending.promise.then(
        (png) => {
          signal.removeEventListener('abort', onAbort);
          resolve(png);
        },
        (error: unknown) => {
          signal.removeEventListener('abort', onAbort);
          reject(error);
        },
      );
    });
  }
}

/** createCardService builds the service from the configuration. */
export function createCardService(config: Config): CardService {
  return new CardService({
    appName: config.appName,
    cacheBytes: config.cardCacheBytes,
    threads: config.cardRenderThreads,
    maxQueue: config.cardRenderQueue,
    timeoutMs: config.cardRenderTimeoutMs,
  });
}
