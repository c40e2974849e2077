/**
 * BudgetedLru is a map that keeps its values within a byte budget, least recently used out first.
 * `sizeOf` tells what one value costs (key included, if the caller counts it); a value that alone
 * costs more than the budget is never kept. A Map iterates in insertion order, so moving a key to
 * the end on use makes the first key the least recently used.
 */
export class BudgetedLru<K, V> {
  private readonly values = new Map<K, { value: V; bytes: number }>();
  private total = 0;

  constructor(
    /** The most bytes the values may cost together. */
    readonly maxBytes: number,
    private readonly sizeOf: (value: V, key: K) => number,
  ) {}

  /** get returns the value for `key` and marks it as the most recently used, or undefined. */
  get(key: K): V | undefined {
    const found = this.values.get(key);
    if (found === undefined) return undefined;
    this.values.delete(key);
    this.values.set(key, found);
    return found.value;
  }

  /** peek returns the value for `key` without marking it as used. */
  peek(key: K): V | undefined {
    return this.values.get(key)?.value;
  }

  has(key: K): boolean {
    return this.values.has(key);
  }

  /**
   * set keeps `value` under `key` as the most recently used, dropping the least recently used
   * values until the budget holds; false (and `key` forgotten) when the value alone is over budget.
   */
  set(key: K, value: V): boolean {
    this.delete(key);
    const bytes = this.sizeOf(value, key);
    if (bytes > this.maxBytes) return false;
    this.values.set(key, { value, bytes });
    this.total += bytes;
    for (const [oldest, held] of this.values) {
      if (this.total <= this.maxBytes) break;
      this.values.delete(oldest);
      this.total -= held.bytes;
    }
    return true;
  }

  /** delete forgets `key`; true when it was held. */
  delete(key: K): boolean {
    const found = this.values.get(key);
    if (found === undefined) return false;
    this.values.delete(key);
    this.total -= found.bytes;
    return true;
  }

  clear(): void {
    this.values.clear();
    this.total = 0;
  }

  /** The bytes the held values cost, by `sizeOf`. */
  get bytes(): number {
    return this.total;
  }

  /** The number of values held. */
  get size(): number {
    return this.values.size;
  }
}
