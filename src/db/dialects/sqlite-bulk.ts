/**
 * An SQLite connection set up for a long run of write transactions (`nonsense import`), whose cost per
 * row must not grow with the database. Each batch of random uuids and texts lands on about as many
 * different pages of the unique indexes (and of the export order's index) as it has rows, once those
 * indexes outgrow a batch; two settings keep what that costs from landing on the writer:
 *
 * - A page cache large enough for every page a batch changes (`cacheBytes`): with the connection's
 *   default, a batch spilled changed pages to the WAL before its commit and read pages again that it
 *   had just let go, so that a batch wrote and read its pages twice or more.
 * - Checkpoints in a thread of their own: copying a batch's pages from the WAL into the database file,
 *   and the two fsyncs that go with it, cost as much as writing the batch, and SQLite does it on the
 *   connection that commits, between two batches. Here the writer's automatic checkpoints are off, and
 *   after each commit the thread's own connection copies what is committed (PASSIVE: it never waits for
 *   the writer, nor the writer for it) while the writer goes on with the next batch. The WAL starts again
 *   from its beginning only when a transaction begins with all of it copied, so once it holds more than
 *   WAL_BOUND_BYTES the writer waits for the thread before its next batch: the WAL stays within that
 *   bound and about two batches more.
 *
 * The thread is a worker of a few lines evaluated from a string, not a worker module: it needs only
 * the driver, whose path is resolved here, and nothing of the service (worker-pool/ is a layer above).
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { sql, type Kysely } from 'kysely';

/** What a writer calls around its transactions; see the module comment. */
export interface BulkWrites {
  /** Before each transaction: waits while the WAL is past its bound and a checkpoint is under way. */
  beforeBatch(): Promise<void>;
  /** After each committed transaction: its pages are copied into the database file meanwhile. */
  afterBatch(): void;
  /** When the writing ends, however it ends: waits for the last checkpoint, and sets the connection back. Never throws. */
  end(): Promise<void>;
}

export interface BulkWriteOptions {
  /** The page cache of the writing connection while it writes, in bytes. */
  cacheBytes: number;
}

/**
 * The WAL's size past which the writer waits for the checkpoint before its next batch. A batch into a
 * large database adds about four pages a row to the WAL (a few tens of MiB for IMPORT_BATCH rows).
 */
export const WAL_BOUND_BYTES = 64 * 1024 * 1024;

/** The thread: one connection of its own, a PASSIVE checkpoint per message, its figures as the answer. */
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const SQLite = require(workerData.driver);
const db = new SQLite(workerData.file, { fileMustExist: true });
parentPort.on('message', (message) => {
  if (message === 'close') {
    db.close();
    parentPort.close();
    return;
  }
  try {
    const [row] = db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({ frames: row.log, copied: row.checkpointed });
  } catch (error) {
    parentPort.postMessage({ error: String(error && error.message || error) });
  }
});
`;

/** The answer of one checkpoint: the WAL's frames and how many of them are in the database file, or why it failed. */
type CheckpointAnswer = { frames: number; copied: number } | { error: string };

/**
 * CheckpointThread runs the checkpoints: at most one at a time, and one more after it when a batch
 * was committed meanwhile. Should the thread fail (it cannot open the file, say), `failed` says so and
 * the writer checkpoints on its own connection again.
 */
class CheckpointThread {
  private readonly worker: Worker;
  private running: Promise<void> | null = null;
  private again = false;
  /** The WAL's frames at the last checkpoint, 0 before the first. */
  private frames = 0;
  failed = false;

  constructor(file: string) {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    // The thread allocates next to nothing in JavaScript: the pages it copies are the driver's.
    this.worker = new Worker(THREAD_SOURCE, { eval: true, workerData: { driver, file }, resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 2 } });
    this.worker.on('error', () => (this.failed = true));
    this.worker.on('exit', () => (this.failed = true));
  }

  /** request asks for a checkpoint of everything committed so far. */
  request(): void {
    if (this.failed) return;
    if (this.running !== null) this.again = true;
    else this.run();
  }

  private run(): void {
    this.again = false;
    this.running = new Promise<void>((resolve) => {
      const done = (answer: CheckpointAnswer | undefined) => {
        this.worker.off('message', done);
        this.worker.off('exit', gone);
        if (answer !== undefined && 'frames' in answer) this.frames = answer.frames;
        this.running = null;
        if (this.again && !this.failed) this.run();
        resolve();
      };
      const gone = () => done(undefined);
      this.worker.on('message', done);
      this.worker.once('exit', gone);
      this.worker.postMessage('checkpoint');
    });
  }

  /** settled waits until no checkpoint runs or is asked for. */
  async settled(): Promise<void> {
    while (this.running !== null) await this.running;
  }

  /** overBound tells whether the WAL held more than `frames` at the last checkpoint. */
  overBound(frames: number): boolean {
    return this.frames > frames;
  }

  async close(): Promise<void> {
    await this.settled();
    if (this.failed) return;
    const exited = new Promise<void>((resolve) => this.worker.once('exit', () => resolve()));
    this.worker.postMessage('close');
    await exited;
  }
}

/** startSqliteBulkWrites sets the connection of `db` (one connection: the SQLite driver's) up for bulk writes to `file`. */
export async function startSqliteBulkWrites(db: Kysely<unknown>, file: string, options: BulkWriteOptions): Promise<BulkWrites> {
  const pragma = async <T = number>(text: string) => Object.values((await sql.raw(`pragma ${text}`).execute(db)).rows[0] ?? {})[0] as T;
  const cacheSize = await pragma('cache_size');
  const autocheckpoint = await pragma('wal_autocheckpoint');
  const pageSize = await pragma('page_size');
  // A negative cache_size is in KiB.
  await pragma(`cache_size = ${-Math.max(1, Math.floor(options.cacheBytes / 1024))}`);
  // An in-memory database (the tests') has no WAL to checkpoint.
  const wal = (await pragma<string>('journal_mode')) === 'wal';
  // The thread starts with the second batch: a write of one batch (most imports) leaves its pages to
  // the connection's own checkpoint, as any write does, without a thread started and stopped for it.
  let thread: CheckpointThread | null = null;
  let committed = 0;
  const boundFrames = Math.floor(WAL_BOUND_BYTES / pageSize);
  let ended = false;
  return {
    async beforeBatch() {
      if (!wal || committed === 0) return;
      if (thread === null) {
        thread = new CheckpointThread(file);
        await pragma('wal_autocheckpoint = 0');
        // The batches committed so far are copied while the next one is written.
        thread.request();
      }
      if (thread.failed) await pragma(`wal_autocheckpoint = ${autocheckpoint}`);
      else if (thread.overBound(boundFrames)) await thread.settled();
    },
    afterBatch() {
      committed++;
      thread?.request();
    },
    async end() {
      if (ended) return;
      ended = true;
      try {
        await thread?.close();
        await pragma(`wal_autocheckpoint = ${autocheckpoint}`);
        await pragma(`cache_size = ${cacheSize}`);
      } catch {
        // The connection is gone (the database closed under the import): nothing is left to set back.
      }
    },
  };
}
