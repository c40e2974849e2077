/**
 * Schemas compile on first use, not when a route is declared: compiling every route's request and
 * response schemas before listening made up a good part of the time from `npm start` to the first
 * answer. A second after the server listens, `compilePendingSchemas` compiles the rest in the
 * background, one schema per turn of the event loop, so that a schema the compiler rejects still
 * shows within seconds of the start (and in the tests, which compile them all).
 *
 * Invariant: Fastify asks its validator and serializer compilers for a route's schemas at start and
 * calls what they return only for a request, so a compiler may return a function that compiles on
 * its first call. test/runtime/compile-later.test.ts fails when a Fastify version calls them
 * otherwise (the app's start compiles, or a request meets an uncompiled schema).
 */

/** The compilations deferred and not yet done. */
const pending = new Set<() => unknown>();

/**
 * compileLater returns a function that compiles on its first call (with `compile`) and answers the
 * same compiled result from then on; until then the compilation waits in the background queue.
 */
export function compileLater<T>(compile: () => T): () => T {
  let compiled: { value: T } | undefined;
  const get = (): T => {
    if (compiled === undefined) {
      compiled = { value: compile() };
      pending.delete(get);
    }
    return compiled.value;
  };
  pending.add(get);
  return get;
}

/** pendingSchemas is the number of compilations deferred and not yet done. */
export function pendingSchemas(): number {
  return pending.size;
}

/**
 * compilePendingSchemas compiles every schema declared so far and not yet used, one per turn of the
 * event loop; it rejects with the compiler's error for a schema it does not accept.
 */
export async function compilePendingSchemas(): Promise<void> {
  for (const compile of [...pending]) {
    compile();
    await new Promise((resolve) => setImmediate(resolve));
  }
}
