/**
 * RenderPool renders cards in worker threads (piscina), so a render never holds the event loop.
 * It runs at most `threads` renders at once and lets at most `maxQueue` more wait; beyond that it
 * refuses at once (CardQueueFull), so a burst of new cards costs a bounded amount of memory and
 * time. A render nobody waits for any more is dropped from the queue, or, when already running,
 * stopped at its next step; one that does not stop within CANCEL_GRACE_MS has its worker terminated.
 * A render that runs past its time limit has its worker terminated too (RenderTimedOut), and one
 * whose worker fails, out of memory or otherwise, ends with RenderFailed.
 */
import type { ShareCardInput } from '../../formats/share-image/render.ts';
import { shareImageCancelled, shareImageRefused, shareImageRender } from '../../metrics/registry.ts';
import { PoolBusy, retryAfterSeconds, TaskPool, workerModule } from '../worker-pool/index.ts';
import type { RenderResult, RenderTask, WorkerMemory } from './render-worker.ts';

/**
 * Idle workers exit after this long. A worker costs the process about 70 MB, and one that drew CJK
 * text 20–30 MB more per face (docs/share-image.md), so memory goes back when cards stop; the next
 * card after that waits ~0.5 s for a new worker to load.
 */
const IDLE_TIMEOUT_MS = 120_000;

/** A worker that goes past this heap is stopped (its render fails) rather than grow without bound. */
const WORKER_MAX_HEAP_MB = 256;

/** How many render time limits a worker may take to start a task before the render is given up. */
const START_LIMITS = 6;

/**
 * How long a cancelled render may take to stop by itself, at its next step, before its worker is
 * terminated. Steps take milliseconds to tens of milliseconds, so a render still running after this
 * is stuck in one; terminating at once would cost every cancelled render a new worker and its fonts.
 */
const CANCEL_GRACE_MS = 1000;

/** The default wall-time limit of a render (CARD_RENDER_TIMEOUT). */
export const RENDER_TIMEOUT_MS = 10_000;
/**
 * The worker's young generation, set with the heap limit: given only the old generation's limit, V8
 * sizes the young one so small that a warm render gets markedly slower (`npm run bench:cards`); set,
 * it also keeps the worker's heap smaller.
 */
const WORKER_YOUNG_GENERATION_MB = 12;

export interface RenderPoolOptions {
  /** Renders that run at once, one per worker thread. */
  threads: number;
  /** Renders that may wait for a thread; more are refused with CardQueueFull. */
  maxQueue: number;
  /** Wall time a render may take once it has a thread, in ms (default RENDER_TIMEOUT_MS); then its worker is terminated. */
  timeoutMs?: number;
  /** How long a cancelled render may take to stop by itself (default CANCEL_GRACE_MS). */
  cancelGraceMs?: number;
  /** The worker's heap limit in MB (default WORKER_MAX_HEAP_MB). */
  maxHeapMb?: number;
}

/** The error a render is refused with when the queue is full; retry after `retryAfterSeconds`. */
export class CardQueueFull extends PoolBusy {
  constructor(retryAfterSeconds: number) {
    super(`Too many new share images are being drawn right now; try again in ${retryAfterSeconds} s.`, retryAfterSeconds);
    this.name = 'CardQueueFull';
  }
}

/** The error a render ends with when its signal aborts first. */
export class RenderAborted extends Error {
  constructor() {
    super('Nobody waits for this share image any more.');
    this.name = 'RenderAborted';
  }
}

/** The error a render ends with when it runs past its time limit; its worker was terminated. */
export class RenderTimedOut extends Error {
  constructor(readonly timeoutMs: number) {
    super(`The share image was not drawn within ${timeoutMs} ms.`);
    this.name = 'RenderTimedOut';
  }
}

/** The error a render ends with when its worker fails: out of memory (`outOfMemory`), or any other error. */
export class RenderFailed extends Error {
  readonly outOfMemory: boolean;
  constructor(cause: unknown) {
    const outOfMemory = (cause as { code?: unknown } | null)?.code === 'ERR_WORKER_OUT_OF_MEMORY';
    super(outOfMemory ? 'The share image needed more memory than a render worker may use.' : 'The share image could not be drawn.', { cause });
    this.name = 'RenderFailed';
    this.outOfMemory = outOfMemory;
  }
}

interface Waiting {
  start: () => void;
  abandon: () => void;
}

export interface PoolStats {
  threads: number;
  running: number;
  waiting: number;
}

export class RenderPool {
  private readonly pool: TaskPool;
  private readonly queue: Waiting[] = [];
  private running = 0;
  // Mean render time (exponentially weighted), for Retry-After.
  private meanMs = 150;

  constructor(private readonly options: RenderPoolOptions) {
    // The threads start with the first card: piscina and sharp cost the main thread ~30 MB of memory,
    // which a process that never draws a card does not pay; most processes draw few cards.
    this.pool = new TaskPool({
      module: workerModule(import.meta.url, './render-worker'),
      threads: options.threads,
      idleTimeoutMs: IDLE_TIMEOUT_MS,
      limits: { maxHeapMb: options.maxHeapMb ?? WORKER_MAX_HEAP_MB, youngGenerationMb: WORKER_YOUNG_GENERATION_MB },
      // The pool's own queue (below) decides what waits, so piscina never queues.
      maxQueue: options.threads,
      // sharp must be loaded by the main thread before any worker uses it: with glibc, a worker that
      // loaded it last would unload libvips when it exits, and crash the process (sharp's documentation).
      beforeStart: () => import('sharp'),
    });
  }

  /**
   * render draws a card in a worker. It rejects with CardQueueFull when every thread is busy and the
   * queue is full, with RenderAborted when `signal` aborts before the card is done, with
   * RenderTimedOut when the render takes longer than `timeoutMs` (the pool's by default) once it has
   * a thread, and with RenderFailed when its worker fails.
   */
  async render(input: ShareCardInput, signal?: AbortSignal, timeoutMs = this.options.timeoutMs ?? RENDER_TIMEOUT_MS): Promise<Buffer> {
    if (signal?.aborted) throw new RenderAborted();
    if (this.running >= this.options.threads) await this.wait(signal);
    else this.running++;
    const cancel = new Int32Array(new SharedArrayBuffer(8));
    // Aborting `terminate` terminates the worker running the task: the only way to stop work inside
    // satori's or resvg's own code.
    const terminate = new AbortController();
    let timedOut = false;
    let grace: NodeJS.Timeout | undefined;
    const onAbort = () => {
      Atomics.store(cancel, 0, 1);
      grace = setTimeout(() => terminate.abort(), this.options.cancelGraceMs ?? CANCEL_GRACE_MS);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    const expire = () => {
      timedOut = true;
      terminate.abort();
    };
    // The time limit counts from when the worker starts drawing (render-worker.ts), not from here:
    // starting a worker thread is not the card's fault, and on a busy host it can take seconds. A
    // worker that never starts the task is given up on after several limits.
    let settled = false;
    let limit = setTimeout(expire, timeoutMs * START_LIMITS);
    const drawing = () => {
      if (settled || timedOut) return;
      clearTimeout(limit);
      limit = setTimeout(expire, timeoutMs);
    };
    const start = Atomics.waitAsync(cancel, 1, 0);
    if (start.async) void start.value.then(drawing);
    else drawing();
    const started = performance.now();
    try {
      const task: RenderTask = { ...input, cancel };
      let result: RenderResult;
      try {
        result = await this.pool.run<RenderResult>('default', task, terminate.signal);
      } catch (error) {
        if (timedOut) throw new RenderTimedOut(timeoutMs);
        if (terminate.signal.aborted) {
          shareImageCancelled.inc();
          throw new RenderAborted();
        }
        throw new RenderFailed(error);
      }
      if ('cancelled' in result) {
        shareImageCancelled.inc();
        throw new RenderAborted();
      }
      const ms = performance.now() - started;
      this.meanMs += (ms - this.meanMs) / 8;
      shareImageRender.observe(ms / 1000);
      return Buffer.from(result.png.buffer, result.png.byteOffset, result.png.byteLength);
    } finally {
      settled = true;
      clearTimeout(limit);
      // Wakes the wait above if the worker never started the task, so that nothing waits on.
      Atomics.notify(cancel, 1);
      clearTimeout(grace);
      signal?.removeEventListener('abort', onAbort);
      this.release();
    }
  }

  /** memory asks one worker (starting one if none runs) what it holds; for measurements. */
  async memory(): Promise<WorkerMemory> {
    return this.pool.run<WorkerMemory>('memory', null);
  }

  get stats(): PoolStats {
    return { threads: this.options.threads, running: this.running, waiting: this.queue.length };
  }

  /** close waits for running renders, refuses waiting ones and stops the workers. */
  async close(): Promise<void> {
    for (const waiting of this.queue.splice(0)) waiting.abandon();
    await this.pool.close();
  }

  private wait(signal: AbortSignal | undefined): Promise<void> {
    if (this.queue.length >= this.options.maxQueue) {
      const perThread = (this.queue.length + this.running) / this.options.threads;
      shareImageRefused.inc();
      throw new CardQueueFull(retryAfterSeconds(perThread * this.meanMs));
    }
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const at = this.queue.indexOf(waiting);
        if (at !== -1) this.queue.splice(at, 1);
        shareImageCancelled.inc();
        reject(new RenderAborted());
      };
      const waiting: Waiting = {
        // A finishing render hands its thread straight to the next in line, so none can jump the queue.
        start: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        abandon: () => {
          signal?.removeEventListener('abort', onAbort);
          reject(new RenderAborted());
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.queue.push(waiting);
    });
  }

  private release(): void {
    const next = this.queue.shift();
    if (next === undefined) this.running--;
    else next.start();
  }
}
