/**
 * Placing a refit's entries on more than one thread. The galaxy thread places batches itself and
 * hands others to helper threads (place-worker.ts, a TaskPool of `threads - 1` threads started for
 * the refit and closed after it), whichever is free, so a refit of many entries uses as many cores
 * as it is given. Where a text lands depends on its batch alone (layout.ts, `batchRandom`), so the
 * layout is the same whichever thread placed which batch, and on however many threads.
 *
 * Memory stays bounded: each lane holds one batch; a helper thread is given the next batch while it
 * places one (so it never waits for the galaxy thread, busy with its own batch), and the galaxy
 * thread reads the next page only once a lane is free.
 */
import { TaskPool, workerModule } from '../worker-pool/index.ts';
import type { LayoutModel, Pause } from './layout.ts';
import type { PlaceResult, PlaceTask } from './place-worker.ts';

const MODULE = workerModule(import.meta.url, './place-worker');
/** A helper thread's heap: the model (a few tens of MB at most) and a batch. */
const HELPER_MAX_HEAP_MB = 256;
const HELPER_YOUNG_GENERATION_MB = 12;
/** Batches given to each helper thread at once: one placed, one waiting. */
const BATCHES_PER_HELPER = 2;

/** Places a batch of texts, returning their framed coordinates. */
export type PlaceBatch = (texts: readonly string[]) => Promise<Float32Array>;

/**
 * Lanes runs jobs, each on a free lane, at most one per lane at a time. `run` waits for a lane and
 * starts the job without waiting for it to end; the first failure is thrown by the next `run` or by
 * `drain`, which waits for every job started.
 */
export class Lanes<L> {
  private readonly free: L[];
  private readonly running = new Set<Promise<void>>();
  private failure: { error: unknown } | null = null;

  constructor(lanes: readonly L[]) {
    this.free = [...lanes];
  }

  /** How many jobs run now (never more than the lanes). */
  get busy(): number {
    return this.running.size;
  }

  async run(job: (lane: L) => Promise<void>): Promise<void> {
    this.check();
    while (this.free.length === 0) {
      await Promise.race(this.running);
      this.check();
    }
    const lane = this.free.pop()!;
    // The job starts now, on this turn (a job of this thread's own lane runs until its first pause).
    const done = (async () => job(lane))().then(
      () => {},
      (error: unknown) => {
        this.failure ??= { error };
      },
    );
    this.running.add(done);
    // Registered before any wait on `done`, so the lane is free again when a waiter wakes.
    void done.then(() => {
      this.running.delete(done);
      this.free.push(lane);
    });
  }

  /** drain waits for every job started, then throws the first failure, if any. */
  async drain(): Promise<void> {
    while (this.running.size > 0) await Promise.all(this.running);
    this.check();
  }

  private check(): void {
    if (this.failure !== null) throw this.failure.error;
  }
}

/**
 * RefitPlacers are the ways a refit places its batches: the galaxy thread itself (with `pause`
 * between sub-batches), and `threads - 1` helper threads. `close` stops the helpers.
 */
export class RefitPlacers {
  private constructor(
    readonly placers: PlaceBatch[],
    private readonly pool: TaskPool | null,
  ) {}

  static create(fit: number, model: LayoutModel, modelBytes: Uint8Array, threads: number, pause: Pause): RefitPlacers {
    const local: PlaceBatch = (texts) => model.place(texts, pause);
    if (threads <= 1) return new RefitPlacers([local], null);
    const pool = new TaskPool({
      module: MODULE,
      threads: threads - 1,
      idleTimeoutMs: 30_000,
      limits: { maxHeapMb: HELPER_MAX_HEAP_MB, youngGenerationMb: HELPER_YOUNG_GENERATION_MB },
    });
    const helper: PlaceBatch = async (texts) => {
      const task: PlaceTask = { fit, texts: [...texts] };
      // A thread without the model says so and is sent it (once per thread: it keeps it).
      const placed = (await pool.run<PlaceResult>('place', task)) ?? (await pool.run<PlaceResult>('place', { ...task, model: modelBytes }));
      if (placed === null) throw new Error('a galaxy helper thread could not read the model');
      return placed;
    };
    // The galaxy thread's own lane comes first in the list and is taken last, so helpers start first.
    return new RefitPlacers([local, ...Array.from({ length: (threads - 1) * BATCHES_PER_HELPER }, () => helper)], pool);
  }

  async close(): Promise<void> {
    await this.pool?.close();
  }
}
