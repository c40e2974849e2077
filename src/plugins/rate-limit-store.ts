/**
 * The in-process store of the rate-limit counters (when no Redis is configured), within a byte
 * budget (RATE_LIMIT_CACHE_BYTES) shared evenly by the budgets (read, image, report): one counter per
 * client address and budget, least recently used first out. Under a crowd of addresses the oldest
 * counters go, which at worst lets such an address start a fresh window: memory stays bounded
 * whatever the number of clients. Its size is reported in /metrics (`nonsense_cache_bytes{cache="rate_limits"}`).
 *
 * It speaks @fastify/rate-limit's store interface (`incr`, `read`, `child`), with the semantics of its
 * LocalStore minus the options this service does not use (ban, backoff, continueExceeding).
 */
import { BudgetedLru } from '../lib/budgeted-lru.ts';

/** What one counter costs: the key (`read:` and an address, UTF-16), the counter object and the Map entry. */
export const COUNTER_BYTES = 200;

type Callback = (error: Error | null, result: { current: number; ttl: number }) => void;

interface Counter {
  current: number;
  startMs: number;
}

/** BudgetedStore holds one budget's counters; `child` makes the store of another budget. */
export class BudgetedStore {
  private readonly counters: BudgetedLru<string, Counter>;

  constructor(
    /** The most counters this store keeps. */
    private readonly capacity: number,
    private readonly stores: Set<BudgetedStore>,
    private readonly now: () => number = Date.now,
  ) {
    this.counters = new BudgetedLru(capacity * COUNTER_BYTES, () => COUNTER_BYTES);
    stores.add(this);
  }

  /** Counters held. */
  get size(): number {
    return this.counters.size;
  }

  incr(key: string, callback: Callback, timeWindow: number): void {
    callback(null, this.count(key, timeWindow, this.now()));
  }

  /**
   * take spends one unit of `key`'s budget unless that would go over `max`, synchronously: the
   * counter after it and the milliseconds left of its window, or null (nothing spent) when the unit
   * would be one too many. The fast lane's check; a refusal is left to @fastify/rate-limit's hook,
   * which counts it and answers 429 as for any other route.
   */
  take(key: string, timeWindow: number, max: number): { current: number; ttl: number } | null {
    const now = this.now();
    const counter = this.live(key, timeWindow, now);
    if (counter !== undefined && counter.current >= max) return null;
    return this.count(key, timeWindow, now);
  }

  read(key: string, callback: Callback, timeWindow: number): void {
    const now = this.now();
    const counter = this.live(key, timeWindow, now);
    if (counter === undefined) callback(null, { current: 0, ttl: 0 });
    else callback(null, { current: counter.current, ttl: timeWindow - (now - counter.startMs) });
  }

  /** child makes the store of one budget (@fastify/rate-limit passes the budget's options). */
  child(_params: object = {}): BudgetedStore {
    return new BudgetedStore(this.capacity, this.stores, this.now);
  }

  /** live is `key`'s counter while its window lasts. */
  private live(key: string, timeWindow: number, now: number): Counter | undefined {
    const counter = this.counters.peek(key);
    return counter === undefined || counter.startMs + timeWindow <= now ? undefined : counter;
  }

  /** count spends one unit of `key`'s budget, starting a new window when the last one is over. */
  private count(key: string, timeWindow: number, now: number): { current: number; ttl: number } {
    let counter = this.live(key, timeWindow, now);
    if (counter === undefined) counter = { current: 1, startMs: now };
    else counter.current++;
    this.counters.set(key, counter);
    return { current: counter.current, ttl: timeWindow - (now - counter.startMs) };
  }
}

/**
 * budgetedStore returns a store class for @fastify/rate-limit's `store` option whose budgets together
 * keep at most `bytes` of counters, a function that tells how many they hold now, and one that
 * finds a budget's store by name (the fast lane spends the read budget from it).
 */
export function budgetedStore(
  bytes: number,
  budgets: number,
): { Store: new () => BudgetedStore; counters: () => number; budget: (name: string) => BudgetedStore | undefined } {
  const capacity = Math.max(1, Math.floor(bytes / COUNTER_BYTES / budgets));
  const stores = new Set<BudgetedStore>();
  const named = new Map<string, BudgetedStore>();
  return {
    Store: class extends BudgetedStore {
      constructor() {
        super(capacity, stores);
        // The plugin's own instance is only the parent of the budgets' stores.
        stores.delete(this);
      }

      /** Each budget's store, named by its `budget` option (rate-limits.ts), for `budget()`. */
      override child(params: object = {}): BudgetedStore {
        const child = super.child(params);
        const name = (params as { budget?: unknown }).budget;
        if (typeof name === 'string') named.set(name, child);
        return child;
      }
    },
    budget: (name) => named.get(name),
    counters: () => {
      let total = 0;
      for (const store of stores) total += store.size;
      return total;
    },
  };
}
