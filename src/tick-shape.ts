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
 * about ten ticks a request, and that cost the read API's fastest routes 1.5-2 µs a request, about a
 * tenth of their time (docs/performance.md, "The tick records' shape"). Holding one record keeps its
 * hidden classes, and the feedback stays monomorphic. test/tick-shape.test.ts checks it.
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
