/**
 * The galaxy's background thread, as the server sees it: started after the database is ready,
 * stopped on shutdown, started again (after a pause) should it die. The thread itself is worker.ts.
 */
import { Worker } from 'node:worker_threads';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.ts';
import type { GalaxyWorkerData, GalaxyWorkerMessage } from './worker.ts';

const WORKER_FILE = import.meta.url.endsWith('.ts') ? new URL('./worker-tsx.mjs', import.meta.url) : new URL('./worker.js', import.meta.url);

/** Between two rounds: new entries appear in the galaxy within about this long. */
export const ROUND_INTERVAL_MS = 2000;
const RETRY_MS = 30_000;
/** A thread that keeps dying (out of its heap, say) is started again at most hourly. */
const MAX_RESTART_MS = 3_600_000;
/** The thread's heap limit: a computation that needs more fails (and is logged) instead of growing the process. */
export const WORKER_MAX_HEAP_MB = 448;
const STOP_WAIT_MS = 5000;

export interface GalaxyBackgroundOptions {
  intervalMs?: number;
  retryMs?: number;
  /** Called after every round with its action (tests wait on it). */
  onRound?: (action: string) => void;
}

export class GalaxyBackground {
  private worker: Worker | null = null;
  private stopped = false;
  private restart: NodeJS.Timeout | null = null;
  /** Deaths of the thread since its last completed round: each doubles the wait before the next start. */
  private deaths = 0;

  constructor(
    private readonly config: Config,
    private readonly log: FastifyBaseLogger,
    private readonly options: GalaxyBackgroundOptions = {},
  ) {}

  /** start starts the thread. */
  start(): void {
    if (this.stopped || this.worker !== null) return;
    const data: GalaxyWorkerData = {
      database: this.config.database,
      busyTimeoutMs: this.config.sqliteBusyTimeoutMs,
      intervalMs: this.options.intervalMs ?? ROUND_INTERVAL_MS,
      retryMs: this.options.retryMs ?? RETRY_MS,
    };
    const worker = new Worker(WORKER_FILE, { workerData: data, resourceLimits: { maxOldGenerationSizeMb: WORKER_MAX_HEAP_MB } });
    this.worker = worker;
    worker.on('message', (message: GalaxyWorkerMessage) => {
      if (message.type === 'round') {
        this.deaths = 0;
        this.options.onRound?.(message.action);
      }
      else this.log[message.level](message.details ?? {}, message.message);
    });
    worker.on('error', (error) => this.log.error({ err: error }, 'galaxy thread failed'));
    worker.on('exit', (code) => {
      this.worker = null;
      if (this.stopped) return;
      const wait = Math.min(MAX_RESTART_MS, (this.options.retryMs ?? RETRY_MS) * 2 ** this.deaths++);
      this.log.warn({ code, restartInMs: wait }, 'galaxy thread stopped; starting it again later');
      this.restart = setTimeout(() => {
        this.restart = null;
        this.start();
      }, wait);
      this.restart.unref();
    });
  }

  /** poke asks for a round now instead of at the end of the pause. */
  poke(): void {
    this.worker?.postMessage({ type: 'poke' });
  }

  /** stop ends the thread: after its current round, or, when that takes too long, at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.restart !== null) clearTimeout(this.restart);
    const worker = this.worker;
    if (worker === null) return;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.postMessage({ type: 'stop' });
    const timer = setTimeout(() => void worker.terminate(), STOP_WAIT_MS);
    await exited;
    clearTimeout(timer);
  }
}
