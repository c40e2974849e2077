/**
 * The nextTick records' shape (src/runtime/tick-shape.ts): after a full collection at a moment when no tick is
 * pending, Node's nextTick literal turns megamorphic, unless a record is held. Checked in a child
 * process that can read V8's feedback (`%DebugPrint`, --allow-natives-syntax) and collect at will
 * (--expose-gc), with the compiled module the command line imports.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const MODULE = path.resolve('dist/runtime/tick-shape.js');

/** The states of the nextTick literal's key definitions after ticks, a full collection at rest, and ticks again. */
async function literalStates(keep: boolean): Promise<string[]> {
  const script = `
    ${keep ? `await import(${JSON.stringify(MODULE)});` : ''}
    const noop = () => {};
    const ticks = (n) => new Promise((resolve) => { for (let i = 0; i < n; i++) process.nextTick(noop); setTimeout(resolve, 20); });
    await ticks(2000);
    globalThis.gc();
    await ticks(10);
    globalThis.gc();
    await ticks(10);
    %DebugPrint(process.nextTick);
  `;
  const { stdout } = await run(process.execPath, ['--allow-natives-syntax', '--expose-gc', '--input-type=module', '-e', script], { timeout: 20_000 });
  return [...stdout.matchAll(/DefineKeyedOwnPropertyInLiteral (\w+)/g)].map((m) => m[1]!);
}

describe('the nextTick records’ shape', () => {
  it('without a record held, a full collection at rest leaves the literal megamorphic (what tick-shape.ts prevents)', async () => {
    const states = await literalStates(false);
    expect(states).toHaveLength(4);
    expect(states).toContain('MEGAMORPHIC');
  });

  it('with tick-shape.js imported, the literal stays monomorphic', async () => {
    const states = await literalStates(true);
    expect(states).toEqual(['MONOMORPHIC', 'MONOMORPHIC', 'MONOMORPHIC', 'MONOMORPHIC']);
  });
});
