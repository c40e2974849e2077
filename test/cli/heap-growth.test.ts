/**
 * The serving process's heap growing factor (src/heap-growth.ts): with it, the old generation grows
 * to about 1.5 times what is alive (plus the young generation) before a full collection; without it
 * V8 let the same program's heap reach close to three times. Each case runs in a process of its own
 * (the factor is process-wide), on the build the command runs.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { limitHeapGrowth } from '../../src/heap-growth.ts';

const run = promisify(execFile);
const MODULE = path.resolve('dist/heap-growth.js');

/**
 * A program that keeps about 80 MB alive, then makes objects that outlive two scavenges (so they are
 * promoted) and die soon after, as the parts of slow requests do. It reports its peak heap in use
 * over its live heap after a full collection.
 */
const PROGRAM = `
import v8 from 'node:v8';
const { limitHeapGrowth } = await import(${JSON.stringify(MODULE)});
if (process.argv[1] === 'limit') limitHeapGrowth([]);
const live = [];
for (let i = 0; i < 600000; i++) live.push({ a: i, b: 'x' + i, c: [i] });
const ring = new Array(40000);
let peak = 0;
for (let i = 0; i < 1500000; i++) {
  ring[i % ring.length] = { s: 'y' + i, numbers: [i, i, i, i, i, i, i, i] };
  if (i % 10000 === 0) peak = Math.max(peak, v8.getHeapStatistics().used_heap_size);
}
globalThis.gc();
console.log(JSON.stringify({ ratio: peak / v8.getHeapStatistics().used_heap_size, live: live.length }));
`;

async function peakOverLive(mode: 'limit' | 'default'): Promise<number> {
  const { stdout } = await run(process.execPath, ['--expose-gc', '--input-type=module', '-e', PROGRAM, mode], { timeout: 60_000 });
  return (JSON.parse(stdout) as { ratio: number }).ratio;
}

describe('the heap growing factor', () => {
  it('keeps the old generation near 1.5 times its live size, where V8 alone lets it grow further', async () => {
    const [limited, unlimited] = await Promise.all([peakOverLive('limit'), peakOverLive('default')]);
    expect(limited).toBeLessThan(2.3);
    expect(unlimited).toBeGreaterThan(limited + 0.3);
  });

  it("leaves an operator's own --heap-growing-percent in force", () => {
    expect(limitHeapGrowth(['--max-old-space-size=512', '--heap-growing-percent=80'])).toBe(false);
    expect(limitHeapGrowth(['--heap_growing_percent=80'])).toBe(false);
  });
});
