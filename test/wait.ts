/**
 * Waiting for a condition instead of for a fixed time: a fixed pause wastes time on a quick machine
 * and is too short on a loaded one. No dependence on the test runner, so helpers outside test files
 * (process-helper.ts) use it too.
 */
import { setTimeout as pause } from 'node:timers/promises';

export interface UntilOptions {
  /** How long to wait at most, in ms (default 5000). */
  timeoutMs?: number;
  /** How long to wait between two checks, in ms (default 20). */
  intervalMs?: number;
}

/**
 * until calls `check` until it returns something other than undefined or false, and returns that.
 * An error thrown by `check` ends the wait at once (a process that exited will not become ready).
 * Past `timeoutMs` it throws, naming `what` (a function is read only then, e.g. a process's output).
 */
export async function until<T>(
  what: string | (() => string),
  check: () => T | undefined | false | Promise<T | undefined | false>,
  { timeoutMs = 5000, intervalMs = 20 }: UntilOptions = {},
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (performance.now() > deadline) throw new Error(`Waited ${timeoutMs} ms in vain for ${typeof what === 'function' ? what() : what}`);
    await pause(intervalMs);
  }
}
