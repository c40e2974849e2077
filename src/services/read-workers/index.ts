/**
 * The read workers: the heavy reads of the embedded database run in worker threads, each with its
 * own connection, so that the event loop only passes finished results on. An export is read and
 * written a page per task (worker.ts): reading a page of 1,000 entries from SQLite and writing it as
 * CSV, JSON or TXT holds a thread for a few milliseconds, and on the event loop that made every point
 * lookup behind it wait. The search page's reads (searchPage), the admin search's (list) and every
 * read of the OData interface (odata: lists, counts, the pages of an `all=true` walk, whose filters
 * and orders can make SQLite scan and sort the whole table) go the same way. PostgreSQL is read
 * asynchronously already and stays on the main thread, as does an in-memory database, which a worker
 * cannot open.
 *
 * Tasks are served by client (the request's address), in turn (fair-queue.ts): a client with many
 * tasks waiting delays another's next task by one of its own, and no client runs tasks on every
 * thread at once while another waits. A new request's task (a search page, an export's first page)
 * goes before the tasks that continue answers (the later pages of exports and walks), so that it
 * waits for the tasks running only: with an export's pages bounded (EntryQuery.listPage), not long.
 * A batch of random picks drawn ahead (draws) goes before both, as random requests wait for it, and
 * so do the reads that warm the pages of a write (warm).
 * The threads start with the first task and exit after a minute without one.
 *
 * The queue is bounded: when READ_WORKER_QUEUE tasks already wait, a new export, search or OData
 * request is refused at once with ReadWorkersBusy (a 503 with Retry-After) instead of waiting behind
 * them all. The pages after an export's or a walk's first are never refused, so a file once started is
 * finished; they count, so many at once fill the queue too. A client that reads slowly holds no
 * place: its next page is read ahead and waits in memory, not in the queue.
 */
import type { DatabaseTarget } from '../../config.ts';
import type { ExportFormat } from '../../domain/export-params.ts';
import { pageSizeOf, type EntryFilter, type PageSizes } from '../../domain/entry-selection.ts';
import type { ServerVariables } from '../../domain/variables.ts';
import { exportHead, exportSeed, exportTail } from '../../formats/export.ts';
import { readWorkersRefused, watchReadWorkers } from '../../metrics/registry.ts';
import { ODataRequestError } from '../../domain/odata/errors.ts';
import { TimeLimitError } from '../../db/time-limit.ts';
import type { ListedEntry, SearchPage } from '../../storage/entry-query.ts';
import type { ODataAnswer, ODataRead } from '../../storage/odata-reads.ts';
import { PoolBusy, retryAfterSeconds, TaskPool, workerModule } from '../worker-pool/index.ts';
import { FairQueue, type JobOrder } from './fair-queue.ts';
import { PageSlots, SLOTTED_PAGE } from './page-slots.ts';
import { entryJsonFromWire } from '../../formats/entry.ts';
import type { Draw, ReadyEntry } from '../entries/index.ts';
import type { DrawnEntry, DrawTask, ListTask, ODataTask, PageFailure, PageResult, PageTask, SearchTask, WarmTask } from './worker.ts';
import type { WriteKeys } from '../../storage/page-warming.ts';

/** An idle worker exits after this long; the next task waits ~100 ms for a new one. */
const IDLE_TIMEOUT_MS = 60_000;

/**
 * A page is a bounded piece of work, but its largest is large: 1,000 entries of 2,000 CJK characters
 * with long server variables make a JSON page of 14 MB, and writing it needs several times that
 * (test/services/read-workers.test.ts writes three in a row; with 32 MiB the worker ran out). A
 * worker going past this heap is stopped and its export aborted. A small young generation keeps the
 * thread's memory down; its collections cost the worker, not the event loop. A larger one makes an
 * export a little faster but lets the process grow past the bound of `npm run bench:abuse`.
 */
const WORKER_MAX_HEAP_MB = 128;
const WORKER_YOUNG_GENERATION_MB = 4;

/** Tasks that may wait, when no queue length is given. */
const DEFAULT_QUEUE = 64;

/** Threads, when no number is given. */
const DEFAULT_THREADS = 2;

/** Whom a task is done for, when a caller names no one (the command line, tests). */
const ANYONE = '';

/** Whom the entry service's random draws are read for: a client of their own, in turn with the others. */
const DRAWS_CLIENT = 'entry service: random draws';

/** Whom the writes' page warming is read for (warm). */
const WRITES_CLIENT = 'writes: pages warmed';

/** How a caller names the client a task is for, and, for an export, what its response holds unsent. */
export interface TaskOptions {
  /** The client's address: tasks are served by client, in turn. */
  client?: string;
}

/** ReadWorkersBusy refuses a request when as many tasks wait for the workers as they queue. */
export class ReadWorkersBusy extends PoolBusy {
  constructor(retryAfterSeconds: number) {
    super(`Too many exports, searches and OData reads are waiting to be read right now; try again in ${retryAfterSeconds} s.`, retryAfterSeconds);
    this.name = 'ReadWorkersBusy';
  }
}

export class ReadWorkers {
  private readonly pool: TaskPool;
  private readonly queue: FairQueue;
  /** A running mean of a task's time in the pool, its wait in the queue included, in ms (for Retry-After). */
  private taskMs = 50;
  private readonly unwatch: () => void;

  private constructor(
    private readonly file: string,
    /** Tasks that may wait; a new request finding them all is refused (ReadWorkersBusy). */
    private readonly waiting: number,
    private readonly threads: number,
  ) {
    // With more than one thread, one client's tasks leave a thread free for the others.
    this.queue = new FairQueue(threads, Math.max(1, threads - 1));
    this.pool = new TaskPool({
      module: workerModule(import.meta.url, './worker'),
      threads,
      idleTimeoutMs: IDLE_TIMEOUT_MS,
      limits: { maxHeapMb: WORKER_MAX_HEAP_MB, youngGenerationMb: WORKER_YOUNG_GENERATION_MB },
      // Four searches at once would otherwise wait for the second thread to start.
      startTogether: true,
    });
    this.unwatch = watchReadWorkers(() => this.queue.size);
  }

  /** forDatabase returns the workers for an SQLite file, or null when heavy reads stay on the main thread. */
  static forDatabase(target: DatabaseTarget, queue = DEFAULT_QUEUE, threads = DEFAULT_THREADS): ReadWorkers | null {
    return target.engine === 'sqlite' && target.file !== ':memory:' ? new ReadWorkers(target.file, queue, Math.max(1, threads)) : null;
  }

  /** queued is the number of tasks waiting for a worker or running in one (/metrics). */
  get queued(): number {
    return this.queue.size;
  }

  /** admit refuses a new request with ReadWorkersBusy when the queue is full. */
  private admit(): void {
    if (this.queue.size >= this.waiting + this.threads) {
      readWorkersRefused.inc();
      // A task's time in the pool, its wait included, is about how long the queue takes to drain.
      throw new ReadWorkersBusy(retryAfterSeconds(this.taskMs));
    }
  }

  /**
   * open starts an export: it reads the first page, so that a failure there becomes an error answer
   * before any byte is sent, and returns the whole file, that page included, a page per chunk, the
   * pages as large as `pageSize` says for each (formats/export.ts exportPageSize). The
   * page after next is asked for only once the previous one has been taken (the response's
   * backpressure); stopping the iteration (a client gone) stops the walk. With `pending` (the bytes
   * the response has been given and not sent yet), the pages travel in the export's slots
   * (page-slots.ts): only for a response written straight to its socket.
   */
  async open(
    format: ExportFormat,
    filter: EntryFilter,
    pageSize: PageSizes,
    variables: ServerVariables,
    { pending, client = ANYONE }: TaskOptions & { pending?: () => number } = {},
  ): Promise<AsyncGenerator<Uint8Array>> {
    this.admit();
    const seed = exportSeed();
    const slots = pending === undefined ? undefined : new PageSlots(pending);
    // Pages read, and pages that held entries: a page that tests rows in order may come back empty
    // (EntryQuery.listPage), and the file's start and its picks count only the others (PageTask.page).
    let walked = 0;
    let written = 0;
    const task = async (after?: PageTask['after']) => {
      const size = pageSizeOf(pageSize, walked++);
      // The first page and small ones come on their own: an export of such pages needs no slots (page-slots.ts).
      const reserved = after === undefined || size < SLOTTED_PAGE ? undefined : slots?.take();
      const result = await this.run<PageResult>(
        client,
        'default',
        {
          file: this.file,
          format,
          filter,
          pageSize: size,
          variables,
          seed,
          page: written,
          ...(after ? { after } : {}),
          ...(reserved ? { slot: reserved.slot } : {}),
        } satisfies PageTask,
        { order: after === undefined ? 'new' : 'later' },
      );
      return { ...result, slot: reserved?.index };
    };
    type Page = Awaited<ReturnType<typeof task>>;
    /** own is a chunk of the file that comes in a buffer of its own, counted when there are slots. */
    const own = (bytes: Uint8Array) => (slots === undefined ? bytes : slots.counts(bytes));
    /** counted counts a page that holds entries, before the next page is asked for. */
    const counted = (page: Page): Page => {
      if (typeof page.bytes === 'number' ? page.bytes > 0 : page.bytes.length > 0) written++;
      return page;
    };
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
    const first = counted(await task());
    const encoder = new TextEncoder();
    async function* file(): AsyncGenerator<Uint8Array> {
      const head = exportHead(format);
      if (head !== '') yield own(encoder.encode(head));
      // The worker reads the next page while this one is sent: one page ahead, no more.
      let current = first;
      // A page read ahead fails at the await that takes it, or is dropped with any error it ends with
      // when the client has gone meanwhile; never a rejection without a handler while a page is sent.
      const readAhead = (from: Page['next']) => {
        const ahead = from === null ? null : task(from);
        ahead?.catch(() => {});
        return ahead;
      };
      let ahead = readAhead(current.next);
      let piece = chunk(current);
      if (piece !== null) yield piece;
      while (ahead !== null) {
        // After this await, every chunk yielded before has been written to the response (PageSlots.take).
        current = counted(await ahead);
        ahead = readAhead(current.next);
        piece = chunk(current);
        if (piece !== null) yield piece;
      }
      const tail = exportTail(format, written === 0);
      if (tail !== '') yield own(encoder.encode(tail));
    }
    return file();
  }

  /**
   * searchPage reads a page of the search page (EntryQuery.searchPage) in the worker. With a common
   * term, finding every match and counting them took the event loop 0.37 s at 200,000 entries; here
   * the page waits for the worker (behind any export's page in its queue) and no other request waits.
   */
  searchPage(filter: EntryFilter, limit: number, position: SearchTask['position'], { client = ANYONE }: TaskOptions = {}): Promise<SearchPage> {
    this.admit();
    return this.run<SearchPage>(client, 'searchTask', { file: this.file, filter, limit, position } satisfies SearchTask);
  }

  /** list reads a search's list of entries (EntryQuery.find, the search page's plan) in the worker: the admin search. */
  list(query: ListTask['query'], { client = ANYONE }: TaskOptions = {}): Promise<ListedEntry[]> {
    this.admit();
    return this.run<ListedEntry[]>(client, 'listTask', { file: this.file, query } satisfies ListTask);
  }

  /**
   * odata runs a read of the OData interface (storage/odata-reads.ts) in a worker, and tells the
   * database time it took, `spent`, even when it fails. `continued` marks a later page of a walk
   * already answering, which is never refused.
   */
  async odata<R extends ODataRead>(
    read: R,
    variableTokens: readonly string[],
    { client = ANYONE, continued = false, spent }: TaskOptions & { continued?: boolean; spent?: (ms: number) => void } = {},
  ): Promise<ODataAnswer<R>> {
    if (!continued) this.admit();
    const { answer, dbMs } = await this.run<{ answer: ODataAnswer<R>; dbMs: number }>(
      client,
      'odataTask',
      { file: this.file, read, variableTokens } satisfies ODataTask,
      { order: continued ? 'later' : 'new', failed: (failure) => spent?.(failure.dbMs ?? 0) },
    );
    spent?.(dbMs);
    return answer;
  }

  /**
   * draws resolves random draws of the entry service ahead of the requests (EntryService.drawsAheadWith):
   * read and prepared in a worker, so that the event loop only takes them. Random requests wait for
   * the batch being drawn, so it goes first in the queue (a few milliseconds' work that answers
   * hundreds of requests), within the share of the service's own client, or on every thread while no
   * other client waits (FairQueue); with the queue full it is refused like any task, and the picks
   * are made per request meanwhile.
   */
  async draws(draws: readonly Draw[], variables: ServerVariables): Promise<Array<ReadyEntry | null>> {
    this.admit();
    const drawn = await this.run<DrawnEntry[]>(DRAWS_CLIENT, 'drawTask', { file: this.file, draws, variables } satisfies DrawTask, { order: 'first' });
    return drawn.map((entry) => (entry === null ? null : { json: entryJsonFromWire(entry.json), asciiBytes: entry.asciiBytes }));
  }

  /**
   * warm reads the pages a write is about to touch (storage/page-warming.ts), first in the
   * queue: a write waits for it. With the queue full it reads nothing, and the write goes on unwarmed.
   * It says how many rows it read.
   */
  async warm(keys: WriteKeys): Promise<number> {
    if (this.queue.size >= this.waiting + this.threads) return 0;
    return this.run<number>(WRITES_CLIENT, 'warmTask', { file: this.file, ...keys } satisfies WarmTask, { order: 'first' });
  }

  /**
   * run runs a task of worker.ts (`name`: its export) for `client` in its turn, and turns a failure
   * back into an error of its kind (after telling `failed`). A `later` task continues an answer (an
   * export's or a walk's next page): a new request's task goes before it, and a `first` one before
   * both (FairQueue).
   */
  private async run<T>(
    client: string,
    name: 'default' | 'searchTask' | 'listTask' | 'odataTask' | 'drawTask' | 'warmTask',
    task: PageTask | SearchTask | ListTask | ODataTask | DrawTask | WarmTask,
    { order = 'new', failed }: { order?: JobOrder; failed?: (failure: PageFailure) => void } = {},
  ): Promise<T> {
    const queued = performance.now();
    const result = await this.queue.run(client, () => this.pool.run<T | PageFailure>(name, task), order);
    this.taskMs += (performance.now() - queued - this.taskMs) / 16;
    if (typeof result === 'object' && result !== null && 'failed' in result) {
      failed?.(result);
      throw revived(result.failed);
    }
    return result as T;
  }

  async close(): Promise<void> {
    this.unwatch();
    await this.pool.close();
  }
}

/** revived is the error a worker's failure stands for, of the class the main thread's callers know. */
function revived(failed: PageFailure['failed']): Error {
  if (failed.name === 'TimeLimitError' && failed.limitMs !== undefined) return new TimeLimitError(failed.limitMs);
  if (failed.name === 'ODataRequestError') return new ODataRequestError(failed.message, (failed.status ?? 400) as ODataRequestError['status']);
  return Object.assign(new Error(failed.message), failed.code === undefined ? {} : { code: failed.code });
}
