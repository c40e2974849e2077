import { describe, expect, it } from 'vitest';
import { BudgetedLru } from '../../src/lib/budgeted-lru.ts';

const strings = (maxBytes: number) => new BudgetedLru<string, string>(maxBytes, (value) => value.length);

describe('BudgetedLru', () => {
  it('drops the least recently used values until the budget holds', () => {
    const lru = strings(6);
    lru.set('a', 'aa');
    lru.set('b', 'bb');
    lru.set('c', 'cc');
    expect(lru.get('a')).toBe('aa'); // a is now the most recent, b the least
    lru.set('d', 'dd');
    expect([lru.has('a'), lru.has('b'), lru.has('c'), lru.has('d')]).toEqual([true, false, true, true]);
    expect([lru.size, lru.bytes]).toEqual([3, 6]);
    lru.set('e', 'eeee');
    expect([...['a', 'c', 'd', 'e'].filter((key) => lru.has(key))]).toEqual(['d', 'e']);
    expect(lru.bytes).toBe(6);
  });

  it('peek leaves the order alone', () => {
    const lru = strings(4);
    lru.set('a', 'aa');
    lru.set('b', 'bb');
    expect(lru.peek('a')).toBe('aa');
    lru.set('c', 'cc');
    expect([lru.has('a'), lru.has('b'), lru.has('c')]).toEqual([false, true, true]);
  });

  it('replaces a value in place, counting only the new one, and marks it recent', () => {
    const lru = strings(6);
    lru.set('a', 'a');
    lru.set('b', 'bb');
    lru.set('a', 'aaa');
    expect([lru.size, lru.bytes]).toEqual([2, 5]);
    lru.set('c', 'cc');
    expect(lru.has('b')).toBe(false);
    expect(lru.has('a')).toBe(true);
  });

  it('never keeps a value over the whole budget, and forgets what the key held', () => {
    const lru = strings(3);
    lru.set('a', 'aa');
    expect(lru.set('a', 'aaaa')).toBe(false);
    expect([lru.size, lru.bytes, lru.get('a')]).toEqual([0, 0, undefined]);
    expect(lru.set('b', 'bbb')).toBe(true);
  });

  it('passes the key to sizeOf, and delete and clear give the bytes back', () => {
    const lru = new BudgetedLru<string, number>(100, (_value, key) => key.length * 10);
    lru.set('abc', 1);
    lru.set('de', 2);
    expect(lru.bytes).toBe(50);
    expect(lru.delete('abc')).toBe(true);
    expect(lru.delete('abc')).toBe(false);
    expect([lru.size, lru.bytes]).toEqual([1, 20]);
    lru.clear();
    expect([lru.size, lru.bytes, lru.get('de')]).toEqual([0, 0, undefined]);
  });
});
