import { describe, expect, it } from 'vitest';
import { PoolBusy, retryAfterSeconds, workerModule } from '../../src/services/worker-pool/index.ts';

describe('worker-pool', () => {
  it('names the worker module beside its pool: .ts from the sources, .js in a build', () => {
    expect(workerModule('file:///srv/src/services/cards/pool.ts', './render-worker')).toBe('file:///srv/src/services/cards/render-worker.ts');
    expect(workerModule('file:///srv/dist/services/cards/pool.js', './render-worker')).toBe('file:///srv/dist/services/cards/render-worker.js');
  });

  it('asks a refused client to wait whole seconds, from 1 to 60', () => {
    expect([0, 1, 999, 1001, 59_500, 600_000].map(retryAfterSeconds)).toEqual([1, 1, 1, 2, 60, 60]);
    expect(new PoolBusy('Busy.', 7).headers).toEqual({ 'retry-after': '7', 'cache-control': 'no-store' });
  });
});
