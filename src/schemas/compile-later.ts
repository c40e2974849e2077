/**
 * Schemas compile on first use, not when a route is declared: compiling every route's request and
 * response schemas before listening made up a good part of the time from `npm start` to the first
 * answer (docs/performance.md, "Start"). A second after the server listens, `compilePendingSchemas`
 * compiles the rest in the background, one schema per turn of the event loop, so that a schema the
 * compiler rejects still shows within seconds of the start (and in the tests, which compile them all).
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
