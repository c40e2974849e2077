/**
 * The galaxy's background thread, as the server sees it. It runs only while there is work: the server
 * checks every few seconds whether the stored layout is behind the entries (`needsWork`), starts the
 * thread when it is, and the thread ends itself after a minute with nothing to do, so that an idle,
 * read-mostly service does not keep a second JavaScript heap and the layout's model in memory. It is
 * stopped on shutdown and started again (after a pause) should it die. The thread itself is worker.ts.
 */
import type { Worker } from 'node:worker_threads';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.ts';
import type { Storage } from '../../storage/index.ts';
import { startThread, workerModule } from '../worker-pool/index.ts';
import { answerStale } from './answer.ts';
import { MODEL_VERSION } from './model-version.ts';
import type { GalaxyWorkerData, GalaxyWorkerMessage } from './worker.ts';

const WORKER_MODULE = workerModule(import.meta.url, './worker');

/** Between two rounds: new entries appear in the galaxy within about this long. */
export const ROUND_INTERVAL_MS = 2000;
const RETRY_MS = 30_000;
/** A thread that keeps dying (out of its heap, say) is started again at most hourly. */
const MAX_RESTART_MS = 3_600_000;
/** The thread's heap limit: a computation that needs more fails (and is logged) instead of growing the process. */
export const WORKER_MAX_HEAP_MB = 448;
/** The thread's young generation: its allocations are few and large, so a small one costs it little and keeps the process smaller. */
export const WORKER_YOUNG_GENERATION_MB = 12;
const STOP_WAIT_MS = 5000;
/** A thread with nothing to do for this long ends itself. */
export const IDLE_EXIT_MS = 60_000;

export interface GalaxyBackgroundOptions {
  intervalMs?: number;
  retryMs?: number;
  idleExitMs?: number;
  /**
   * Whether the stored layout is behind the entries (asked every intervalMs while no thread runs);
   * without it the thread is started at once and whenever it ends.
   */
  needsWork?: () => Promise<boolean>;
  /** How long stop waits for the thread to end itself before it terminates it (default 5 s). */
  stopWaitMs?: number;
  /** Called after every round with its action (tests wait on it). */
  onRound?: (action: string) => void;
}

export class GalaxyBackground {
  private worker: Worker | null = null;
  private stopped = false;
  private restart: NodeJS.Timeout | null = null;
  /** Deaths of the thread since its last completed round: each doubles the wait before the next start. */
  private deaths = 0;
  private check: NodeJS.Timeout | null = null;
  private checking = false;

  constructor(
    private readonly config: Config,
    private readonly log: FastifyBaseLogger,
    private readonly options: GalaxyBackgroundOptions = {},
  ) {}

  /** running tells whether the thread is alive now. */
  get running(): boolean {
    return this.worker !== null;
  }

  /**
   * start watches for work, and starts the thread when there is some (at the first check without
   * `needsWork`). The first check comes one interval after start, not at once: a server starts this
   * as it begins to listen, and the thread's own start (its modules, its connection, its first reads)
   * would take a core from the first requests and the entry service's first reads.
   */
  start(): void {
    if (this.stopped || this.check !== null) return;
    this.check = setInterval(() => void this.startIfNeeded(), this.options.intervalMs ?? ROUND_INTERVAL_MS);
    this.check.unref();
  }

  private async startIfNeeded(): Promise<void> {
    if (this.stopped || this.worker !== null || this.restart !== null || this.checking) return;
    this.checking = true;
    try {
      const needed = this.options.needsWork === undefined || (await this.options.needsWork());
      if (needed) this.startWorker();
    } catch (error) {
      // The database does not answer: the thread would fail too; ask again at the next check.
      this.log.debug({ err: error }, 'galaxy: could not check for work');
    } finally {
      this.checking = false;
    }
  }

  private startWorker(): void {
    if (this.stopped || this.worker !== null) return;
    const data: GalaxyWorkerData = {
      database: this.config.database,
      busyTimeoutMs: this.config.sqliteBusyTimeoutMs,
      intervalMs: this.options.intervalMs ?? ROUND_INTERVAL_MS,
      retryMs: this.options.retryMs ?? RETRY_MS,
      idleExitMs: this.options.idleExitMs ?? IDLE_EXIT_MS,
      threads: this.config.galaxyThreads,
    };
    const worker = startThread(WORKER_MODULE, { maxHeapMb: WORKER_MAX_HEAP_MB, youngGenerationMb: WORKER_YOUNG_GENERATION_MB }, data);
    this.worker = worker;
    let idle = false;
    worker.on('message', (message: GalaxyWorkerMessage) => {
      if (message.type === 'round') {
        this.deaths = 0;
        this.options.onRound?.(message.action);
      } else if (message.type === 'idle') idle = true;
      else this.log[message.level](message.details ?? {}, message.message);
    });
    worker.on('error', (error) => this.log.error({ err: error }, 'galaxy thread failed'));
    worker.on('exit', (code) => {
      this.worker = null;
      // Ended for want of work: the next check starts it again when there is some.
      if (this.stopped || (idle && code === 0)) return;
      const wait = Math.min(MAX_RESTART_MS, (this.options.retryMs ?? RETRY_MS) * 2 ** this.deaths++);
      this.log.warn({ code, restartInMs: wait }, 'galaxy thread stopped; starting it again later');
      this.restart = setTimeout(() => {
        this.restart = null;
        this.startWorker();
      }, wait);
      this.restart.unref();
    });
  }

  /**
   * stop ends the thread: its round ends at the next pause. A layout has stretches without one (the
   * text space and the neighbour graph of its sample: about 3 s for 2,400 texts on a slow 2-core
   * host); a thread not gone within STOP_WAIT_MS is terminated, and says so in the log.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.restart !== null) clearTimeout(this.restart);
    if (this.check !== null) clearInterval(this.check);
    const worker = this.worker;
    if (worker === null) return;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.postMessage({ type: 'stop' });
    const waitMs = this.options.stopWaitMs ?? STOP_WAIT_MS;
    const timer = setTimeout(() => {
      this.log.warn({ waitedMs: waitMs }, 'galaxy thread did not end by itself; terminated');
      void worker.terminate();
    }, waitMs);
    await exited;
    clearTimeout(timer);
  }
}

/**
 * galaxyBehind tells whether the stored layout is missing, of another model version, or behind the
 * entries, or its stored answer is to be written again (a few small reads).
 */
export async function galaxyBehind(storage: Storage): Promise<boolean> {
  const layout = await storage.galaxy.layout();
  if (layout === null || layout.model_version !== MODEL_VERSION) return true;
  const revision = await storage.galaxy.revision();
  return layout.revision !== revision || (await answerStale(storage.galaxy, layout, revision));
}
