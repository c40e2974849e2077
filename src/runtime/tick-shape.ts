/**
 * Keeps the shape of Node's `process.nextTick` records alive for the life of the process, so that
 * V8 keeps creating them on its fast path. Imported first by the command line (cli.ts), before the
 * first full garbage collection.
 *
 * Every `process.nextTick` builds a record as an object literal with two symbol keys (Node 20,
 * lib/internal/process/task_queues.js), whose hidden classes exist only while some record does. A
 * full collection at a moment when no tick is pending (a service between two requests) frees them;
 * the next record gets new ones, and the literal's feedback, which remembered the old ones, turns
 * megamorphic for good: from then on every tick defines its keys through V8's runtime. HTTP takes
 * about ten ticks a request, which makes that a measurable share of the random and by-UUID reads.
 * Holding one record keeps its hidden classes, and the feedback stays monomorphic.
 *
 * Invariant: nextTick's record is such a literal, and Node exposes it as the `TickObject` resource
 * of an async hook. test/runtime/tick-shape.test.ts fails on a Node version where a full collection
 * at rest no longer turns the literal megamorphic (then this module is not needed), or where
 * holding the record no longer keeps it monomorphic (then it does not work).
 *
 * The record is taken from an async hook enabled for one `nextTick` call only; no hook stays.
 */
import { createHook } from 'node:async_hooks';

let record: object | undefined;

/** keepTickShape holds one nextTick record (once per process); it tells whether it holds one. */
export function keepTickShape(): boolean {
  if (record !== undefined) return true;
  const hook = createHook({
    init(_asyncId, type, _triggerAsyncId, resource) {
      if (type === 'TickObject') record = resource;
    },
  }).enable();
  try {
    process.nextTick(() => {});
  } finally {
    hook.disable();
  }
  return record !== undefined;
}

keepTickShape();
