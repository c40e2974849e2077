/**
 * How far the serving process lets V8's old generation grow past what is alive before a full
 * collection. V8 chooses the factor itself, between 1.1 and 4 times the live heap plus the young
 * generation, from how fast it collects: under a mixed load it let the main thread's heap grow from
 * 40 to over 100 MB of promoted garbage (parts of slow requests and of `/metrics` scrapes) before it
 * collected, so a process's size under load depended on when its last full collection happened
 * (docs/performance.md, "Memory under abuse"). A fixed 1.5 bounds that headroom to half the live
 * heap: about one full collection every 10 s under the abuse fuzz, each 15-20 ms of the main
 * thread's time, and one in 20 s of random reads at 5,000 a second.
 *
 * An explicit `--heap-growing-percent` on Node's command line wins: the operator's choice is kept.
 */
import v8 from 'node:v8';

/** The old generation may grow by this much of its live size before a full collection. */
export const HEAP_GROWING_PERCENT = 50;

/** limitHeapGrowth sets V8's growing factor for this process unless its command line sets one. */
export function limitHeapGrowth(execArgv: readonly string[] = process.execArgv): boolean {
  if (execArgv.some((flag) => /^--heap[-_]growing[-_]percent\b/.test(flag))) return false;
  // V8 reads this flag each time it sets the next collection's limit, so it applies from the next one.
  v8.setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  return true;
}
