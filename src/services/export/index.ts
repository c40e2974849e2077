/**
 * Exports from the embedded database are read and written in a worker thread, a page per task
 * (page-worker.ts), so that the event loop only passes finished bytes on to the client. Reading a
 * page of 1,000 entries from SQLite and writing it as CSV, JSON or TXT holds a thread for a few
 * milliseconds; on the event loop that made every point lookup behind it wait (mixed load, point
 * lookups at 7 times their idle latency). PostgreSQL is read asynchronously already and exports on
 * the main thread, as does an in-memory database, which a worker cannot open.
 *
 * One thread serves every export, its pages taken in turn (piscina's queue), so concurrent exports
 * share it fairly and a burst of exports cannot start threads without bound. It starts with the first
 * export and exits after a minute without one.
 *
 * The search page's reads go through the same thread (searchPage), as do the admin search's (list):
 * finding and counting a common term's matches over every entry is as heavy as an export page, and
 * held the event loop for a third of a second at 200,000 entries.
 *
 * The thread's queue is bounded: when EXPORT_WORKER_QUEUE tasks already wait while one runs, a new
 * export, search page or admin search is refused at once with ExportWorkerBusy (a 503 with
 * Retry-After) instead of waiting behind them all. The pages after an export's first are never
 * refused, so a file once started is finished; they count, so many exports at once fill the queue
 * too. A client that reads slowly holds no place: its next page is read ahead and waits in memory,
 * not in the queue.
 */
import type { Piscina } from 'piscina';
import type { DatabaseTarget } from '../../config.ts';
import type { ExportFormat } from '../../domain/export-params.ts';
import type { EntryFilter } from '../../domain/entry-selection.ts';
import type { ServerVariables } from '../../domain/variables.ts';
import { exportHead, exportSeed, exportTail } from '../../formats/export.ts';
import { watchExportWorkers } from '../../metrics/registry.ts';
import type { ListedEntry, SearchPage } from '../../storage/entry-query.ts';
import { PageSlots } from './page-slots.ts';
import type { ListTask, PageFailure, PageResult, PageTask, SearchTask } from './page-worker.ts';

// From TypeScript sources (tsx, vitest) a worker thread cannot load .ts by itself; see page-worker-tsx.mjs.
const WORKER_FILE = import.meta.url.endsWith('.ts') ? new URL('./page-worker-tsx.mjs', import.meta.url) : new URL('./page-worker.js', import.meta.url);

/** An idle worker exits after this long; the next export waits ~100 ms for a new one. */
const IDLE_TIMEOUT_MS = 60_000;

/**
 * A page is a bounded piece of work, but its largest is large: 1,000 entries of 2,000 CJK characters
 * with long server variables make a JSON page of 14 MB, and writing it needs several times that
 * (test/services/export-workers.test.ts writes three in a row; with 32 MiB the worker ran out). A
 * worker going past this heap is stopped and its export aborted. A small young generation keeps the
 * thread's memory down; its collections cost the worker, not the event loop. With 4 MiB the worker
 * scavenges about 100 times a CSV export of 200,000 entries; 8 MiB made that export 6-8 % faster,
 * but the abuse benchmark's growth went from +62 to +86 and +105 MiB, over its bound of +100
 * (docs/performance.md, Export).
 */
const WORKER_MAX_HEAP_MB = 128;
const WORKER_YOUNG_GENERATION_MB = 4;

/** Tasks that may wait while one runs, when no queue length is given. */
const DEFAULT_QUEUE = 64;

/**
 * ExportWorkerBusy refuses a request when as many tasks wait for the worker as it queues: answered
 * 503 with Retry-After (plugins/problem.ts), rather than waiting behind them all.
 */
export class ExportWorkerBusy extends Error {
  constructor(readonly retryAfterSeconds: number) {
    super(`Too many exports and searches are waiting to be read right now; try again in ${retryAfterSeconds} s.`);
    this.name = 'ExportWorkerBusy';
  }
}

export class ExportWorkers {
  private started: Promise<Piscina> | null = null;
  /** Tasks waiting for the worker or running in it. */
  private tasks = 0;
  /** A running mean of a task's time in the pool, its wait in the queue included, in ms (for Retry-After). */
  private taskMs = 50;
  private readonly unwatch: () => void;

  private constructor(
    private readonly file: string,
    /** Tasks that may wait while one runs; a new request finding them all is refused (ExportWorkerBusy). */
    private readonly queue: number,
  ) {
    this.unwatch = watchExportWorkers(() => this.tasks);
  }

  /** forDatabase returns the workers for an SQLite file, or null when exports stay on the main thread. */
  static forDatabase(target: DatabaseTarget, queue = DEFAULT_QUEUE): ExportWorkers | null {
    return target.engine === 'sqlite' && target.file !== ':memory:' ? new ExportWorkers(target.file, queue) : null;
  }

  /** queued is the number of tasks waiting for the worker or running in it (/metrics). */
  get queued(): number {
    return this.tasks;
  }

  /** admit refuses a new request with ExportWorkerBusy when the queue is full. */
  private admit(): void {
    if (this.tasks > this.queue) {
      // A task's time in the pool, its wait included, is about how long the queue takes to drain.
      throw new ExportWorkerBusy(Math.min(60, Math.max(1, Math.ceil(this.taskMs / 1000))));
    }
  }

  private piscina(): Promise<Piscina> {
    this.started ??= import('piscina').then(
      ({ Piscina }) =>
        new Piscina({
          filename: WORKER_FILE.href,
          minThreads: 0,
          maxThreads: 1,
          idleTimeout: IDLE_TIMEOUT_MS,
          concurrentTasksPerWorker: 1,
          resourceLimits: { maxOldGenerationSizeMb: WORKER_MAX_HEAP_MB, maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
        }),
    );
    return this.started;
  }

  /**
   * open starts an export: it reads the first page, so that a failure there becomes an error answer
   * before any byte is sent, and returns the whole file, that page included, a page per chunk. The
   * page after next is asked for only once the previous one has been taken (the response's
   * backpressure); stopping the iteration (a client gone) stops the walk. With `pending` (the bytes
   * the response has been given and not sent yet), the pages travel in the export's slots
   * (page-slots.ts): only for a response written straight to its socket.
   */
  async open(format: ExportFormat, filter: EntryFilter, pageSize: number, variables: ServerVariables, pending?: () => number): Promise<AsyncGenerator<Uint8Array>> {
    this.admit();
    const seed = exportSeed();
    const slots = pending === undefined ? undefined : new PageSlots(pending);
    let page = 0;
    const task = async (after?: PageTask['after']) => {
      // The first page comes on its own: an export of one page needs no slots (page-slots.ts).
      const reserved = after === undefined ? undefined : slots?.take();
      const result = await this.run<PageResult>('default', {
        file: this.file,
        format,
        filter,
        pageSize,
        variables,
        seed,
        page: page++,
        ...(after ? { after } : {}),
        ...(reserved ? { slot: reserved.slot } : {}),
      } satisfies PageTask);
      return { ...result, slot: reserved?.index };
    };
    type Page = Awaited<ReturnType<typeof task>>;
    /** own is a chunk of the file that comes in a buffer of its own, counted when there are slots. */
    const own = (bytes: Uint8Array) => (slots === undefined ? bytes : slots.counts(bytes));
    /** chunk is a page's chunk of the file, or null for an empty page. */
    const chunk = ({ bytes, slot }: Page): Uint8Array | null => {
      if (typeof bytes === 'number') {
        if (bytes > 0) return slots!.chunk(slot!, bytes);
        slots!.release(slot!);
        return null;
      }
      if (slot !== undefined) slots!.release(slot);
      return bytes.length === 0 ? null : own(bytes);
    };
    const first = await task();
    const empty = typeof first.bytes === 'number' ? first.bytes === 0 : first.bytes.length === 0;
    const encoder = new TextEncoder();
    async function* file(): AsyncGenerator<Uint8Array> {
      const head = exportHead(format);
      if (head !== '') yield own(encoder.encode(head));
      // The worker reads the next page while this one is sent: one page ahead, no more.
      let current = first;
      let ahead = current.next === null ? null : task(current.next);
      try {
        let piece = chunk(current);
        if (piece !== null) yield piece;
        while (ahead !== null) {
          // After this await, every chunk yielded before has been written to the response (PageSlots.take).
          current = await ahead;
          ahead = current.next === null ? null : task(current.next);
          piece = chunk(current);
          if (piece !== null) yield piece;
        }
      } finally {
        // A client gone mid-file: the page read ahead is dropped, and so is any error it ends with.
        ahead?.catch(() => {});
      }
      const tail = exportTail(format, empty);
      if (tail !== '') yield own(encoder.encode(tail));
    }
    return file();
  }

  /**
   * searchPage reads a page of the search page (EntryQuery.searchPage) in the worker. With a common
   * term, finding every match and counting them took the event loop 0.37 s at 200,000 entries; here
   * the page waits for the worker (behind any export's page in its queue) and no other request waits.
   */
  searchPage(filter: EntryFilter, limit: number, position: SearchTask['position']): Promise<SearchPage> {
    this.admit();
    return this.run<SearchPage>('searchTask', { file: this.file, filter, limit, position } satisfies SearchTask);
  }

  /** list reads a list of entries (EntryQuery.list) in the worker: the admin search, for one. */
  list(query: ListTask['query']): Promise<ListedEntry[]> {
    this.admit();
    return this.run<ListedEntry[]>('listTask', { file: this.file, query } satisfies ListTask);
  }

  /** run runs a task of page-worker.ts (`name`: its export) and turns a failure back into an error. */
  private async run<T>(name: 'default' | 'searchTask' | 'listTask', task: PageTask | SearchTask | ListTask): Promise<T> {
    this.tasks++;
    let result: T | PageFailure;
    try {
      const pool = await this.piscina();
      const started = performance.now();
      result = (await pool.run(task, { name })) as T | PageFailure;
      this.taskMs += (performance.now() - started - this.taskMs) / 16;
    } finally {
      this.tasks--;
    }
    if (typeof result === 'object' && result !== null && 'failed' in result) {
      throw Object.assign(new Error(result.failed.message), result.failed.code === undefined ? {} : { code: result.failed.code });
    }
    return result as T;
  }

  async close(): Promise<void> {
    this.unwatch();
    if (this.started !== null) await (await this.started).close();
  }
}
