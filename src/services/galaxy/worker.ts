/**
 * The galaxy's background thread (started by background.ts): every few seconds one round of
 * `GalaxyComputer` over its own database connection, at a lower CPU priority than the thread that
 * serves requests. It reports what it does to the main thread, which logs it.
 */
import os from 'node:os';
import { parentPort } from 'node:worker_threads';
import type { DatabaseTarget } from '../../config.ts';
import { openDatabase } from '../../db/database.ts';
import { threadData } from '../worker-pool/index.ts';
import { GalaxyComputer } from './compute.ts';

export interface GalaxyWorkerData {
  database: DatabaseTarget;
  busyTimeoutMs?: number;
  /** Pause between two rounds. */
  intervalMs: number;
  /** Pause after a failed round; it doubles with each failure in a row, up to MAX_RETRY_MS. */
  retryMs: number;
  /** After this long with nothing to do, the thread ends (the server starts it again when there is work). */
  idleExitMs: number;
  /** Threads a refit places entries on (GALAXY_THREADS): this one and helpers. */
  threads: number;
}

/** Messages to the main thread. */
export type GalaxyWorkerMessage =
  | { type: 'log'; level: 'info' | 'warn' | 'error'; message: string; details?: Record<string, unknown> }
  | { type: 'round'; action: string }
  | { type: 'idle' };

/** The longest pause after failures in a row: a layout that cannot be computed is retried hourly. */
const MAX_RETRY_MS = 3_600_000;

const port = parentPort!;
const options = threadData<GalaxyWorkerData>();
const post = (message: GalaxyWorkerMessage) => port.postMessage(message);

// On Linux a nice value belongs to a thread: this lowers this thread only, not the request thread.
try {
  os.setPriority(10);
} catch {
  // Not allowed here (some containers): the layout still works, at normal priority.
}

let stopping = false;
let wake: () => void = () => {};
// A stop ends the running round at its next pause (a fraction of a second in the layout's
// optimisation; its first steps have none for a few seconds, background.ts): what it wrote so far is a
// fit that never became current, which the next refit deletes.
const stop = new AbortController();
port.on('message', (message: { type: 'stop' }) => {
  if (message.type === 'stop') {
    stopping = true;
    stop.abort(new Error('stopping'));
  }
  wake();
});
const sleep = (ms: number) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    wake = () => {
      clearTimeout(timer);
      resolve();
    };
  });

const database = await openDatabase(options.database, { busyTimeoutMs: options.busyTimeoutMs });
const computer = new GalaxyComputer(database, { log: (message, details) => post({ type: 'log', level: 'info', message, details }), signal: stop.signal, threads: options.threads });
try {
  await computer.warm();
} catch (error) {
  post({ type: 'log', level: 'warn', message: 'galaxy model not read ahead; the first round reads it', details: { error: (error as Error).message } });
}
let failures = 0;
let lastWork = Date.now();
while (!stopping) {
  let wait = options.intervalMs;
  try {
    const result = await computer.run();
    failures = 0;
    post({ type: 'round', action: result.action });
    if (result.action !== 'none') lastWork = Date.now();
    else if (Date.now() - lastWork >= options.idleExitMs) {
      // Up to date for a while: end, and give the memory back; a read-mostly service rarely needs it.
      post({ type: 'idle' });
      break;
    }
  } catch (error) {
    if (stopping) break;
    wait = Math.min(MAX_RETRY_MS, options.retryMs * 2 ** failures++);
    post({ type: 'log', level: 'warn', message: 'galaxy round failed; trying again later', details: { error: (error as Error).message, retryMs: wait } });
  }
  if (!stopping) await sleep(wait);
}
await database.close();
port.close();
