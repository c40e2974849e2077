/**
 * What the service's worker threads share: the read workers (read-workers/), the card renders
 * (cards/pool.ts) and the galaxy's layout thread (galaxy/background.ts).
 *
 * - Which code a thread runs (`workerModule`): a worker module beside its pool, loaded by one entry
 *   script (entry.mjs), from the compiled build or, under the tests and tools, from TypeScript.
 * - Its limits (`ThreadLimits`): the heap a thread may grow to before it is stopped, and its young
 *   generation.
 * - `TaskPool`: threads started with the first task, not at start (a process that never needs them
 *   pays neither their memory nor piscina's), that exit after a while without one; a task can be
 *   stopped by terminating its thread.
 * - `PoolBusy`: the refusal of a pool whose queue is full, with the seconds to wait before trying
 *   again; the error handler answers it 503 with Retry-After (plugins/problem.ts).
 */
import { Worker, workerData, type WorkerOptions } from 'node:worker_threads';
import type { Piscina } from 'piscina';

const ENTRY = new URL('./entry.mjs', import.meta.url);

/** What a thread is started with: the module entry.mjs loads, and the thread's own data (`threadData`). */
interface EntryData {
  workerModule: string;
  data?: unknown;
}

/**
 * workerModule names the worker module `name` (without its extension) beside the module whose URL is
 * `from`: its .ts when that runs from the sources, its compiled .js in a build.
 */
export function workerModule(from: string, name: string): string {
  return new URL(`${name}${from.endsWith('.ts') ? '.ts' : '.js'}`, from).href;
}

/** The memory a thread may use: past `maxHeapMb` of old generation it is stopped (ERR_WORKER_OUT_OF_MEMORY). */
export interface ThreadLimits {
  maxHeapMb: number;
  /** A small young generation keeps the thread's memory down; its collections cost the thread, not the event loop. */
  youngGenerationMb: number;
}

const resourceLimits = ({ maxHeapMb, youngGenerationMb }: ThreadLimits) => ({ maxOldGenerationSizeMb: maxHeapMb, maxYoungGenerationSizeMb: youngGenerationMb });

/**
 * PoolBusy refuses a task when as many wait as the pool queues, rather than have it wait behind them
 * all; retry after `retryAfterSeconds`. Its message is the answer's detail.
 */
export class PoolBusy extends Error {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
    this.name = 'PoolBusy';
  }

  /** The headers of the 503 it is answered with: when to try again, and that the answer is not to be kept. */
  get headers(): Record<string, string> {
    return { 'retry-after': String(this.retryAfterSeconds), 'cache-control': 'no-store' };
  }
}

/** retryAfterSeconds is a wait of about `ms`, in whole seconds from 1 to 60, for PoolBusy. */
export function retryAfterSeconds(ms: number): number {
  return Math.min(60, Math.max(1, Math.ceil(ms / 1000)));
}

export interface TaskPoolOptions {
  /** The worker module (workerModule), whose exports run the tasks. */
  module: string;
  threads: number;
  /** An idle thread exits after this long; the next task waits for a new one to start. */
  idleTimeoutMs: number;
  limits: ThreadLimits;
  /** Tasks piscina itself lets wait; a pool that decides what waits by itself sets `threads`. */
  maxQueue?: number;
  /** What must be loaded on the main thread before the first thread starts. */
  beforeStart?: () => Promise<unknown>;
  /**
   * Start every thread with the first task after an idle spell, not one more per task that finds
   * them all busy: a burst of tasks then meets threads that are ready, instead of each waiting for a
   * thread to start (a tenth of a second, more on a busy host). They still end when idle.
   */
  startTogether?: boolean;
}

/** TaskPool runs tasks of one worker module in piscina threads, started with the first task. */
export class TaskPool {
  private started: Promise<Piscina> | null = null;
  private closed = false;

  constructor(private readonly options: TaskPoolOptions) {}

  private piscina(): Promise<Piscina> {
    this.started ??= (async () => {
      await this.options.beforeStart?.();
      const { Piscina } = await import('piscina');
      const piscina = new Piscina({
        filename: ENTRY.href,
        workerData: { workerModule: this.options.module } satisfies EntryData,
        minThreads: 0,
        maxThreads: this.options.threads,
        idleTimeout: this.options.idleTimeoutMs,
        ...(this.options.maxQueue === undefined ? {} : { maxQueue: this.options.maxQueue }),
        concurrentTasksPerWorker: 1,
        resourceLimits: resourceLimits(this.options.limits),
      });
      // piscina emits the error of a thread that fails with no task of its own (while starting, or
      // between tasks); unheard, the event would end the process. Tasks fail by themselves.
      piscina.on('error', () => {});
      return piscina;
    })();
    return this.started;
  }

  /**
   * run runs `task` with the worker module's export `name`; aborting `terminate` terminates the
   * thread running it (piscina starts another for the next task), the only way to stop work inside
   * code that never looks up.
   */
  async run<T>(name: string, task: unknown, terminate?: AbortSignal): Promise<T> {
    // A task asked for while the process shuts down would start a thread, and a connection, after the pool's end.
    if (this.closed) throw new Error('the worker pool is closed');
    const piscina = await this.piscina();
    const running = piscina.run({ name, task }, terminate === undefined ? {} : { signal: terminate });
    if (this.options.startTogether === true) this.startAll(piscina);
    return (await running) as T;
  }

  /**
   * startAll starts the threads not running: a task with no name (entry.mjs answers it at once)
   * goes to a new thread while the running ones are busy or starting.
   */
  private startAll(piscina: Piscina): void {
    for (let missing = this.options.threads - piscina.threads.length; missing > 0; missing--) {
      piscina.run({}).catch(() => {});
    }
  }

  /** close waits for the running tasks and stops the threads. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.started !== null) await (await this.started).close();
  }
}

/** startThread starts one long-lived thread running the worker module `module` (workerModule) with `data` (threadData). */
export function startThread(module: string, limits: ThreadLimits, data: unknown, options: Omit<WorkerOptions, 'workerData' | 'resourceLimits'> = {}): Worker {
  return new Worker(ENTRY, { ...options, workerData: { workerModule: module, data } satisfies EntryData, resourceLimits: resourceLimits(limits) });
}

/** threadData is, inside a thread of startThread, the data it was started with. */
export function threadData<T>(): T {
  return (workerData as EntryData).data as T;
}
