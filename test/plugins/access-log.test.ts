/**
 * The log's batched destination and the access line written without pino: the same bytes as pino's
 * line (but the time), in order, and written within 100 ms.
 */
import fc from 'fast-check';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { accessLine, BatchedDestination } from '../../src/plugins/access-log.ts';

describe('accessLine', () => {
  it('is pino’s line at level info, byte for byte', () => {
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(line) });
    const prefix = (logger as unknown as Record<symbol, string>)[pino.symbols.chindingsSym]!;
    expect(prefix).toMatch(/^,"pid":\d+,"hostname":/);
    const cases: [string, string, string, number, number][] = [
      ['0b7c9d9e-1c2a-4b4e-8f00-3a2b1c0d9e8f', 'GET', '/api/v1/nonsense/random', 200, 0.3],
      ['proxy:id-1', 'POST', '/search?q="quoted"\\&x=é漢🦆\u0001', 404, 12],
      // Node hands over the request line as latin1: every character from 0 to 255 may come.
      ['x', 'OPTIONS', `/${Array.from({ length: 256 }, (_, i) => String.fromCharCode(i)).join('')}`, 204, 0],
    ];
    for (const [id, method, url, status, ms] of cases) {
      logger.info({ reqId: id, method, url, status, ms }, 'request');
      const written = lines.pop()!;
      const time = JSON.parse(written).time as number;
      expect(accessLine(prefix, time, id, method, url, status, ms)).toBe(written);
    }
  });
  it('is pino’s line for any id, method and URL', () => {
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(line) });
    const prefix = (logger as unknown as Record<symbol, string>)[pino.symbols.chindingsSym]!;
    // Plain printable ASCII (written as it is), anything else (escaped by JSON.stringify), lone surrogates included.
    const text = fc.oneof(fc.stringMatching(/^[\x20-\x7e]*$/), fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme-composite' }));
    fc.assert(
      fc.property(text, text, text, (id, method, url) => {
        logger.info({ reqId: id, method, url, status: 200, ms: 1.5 }, 'request');
        const written = lines.pop()!;
        expect(accessLine(prefix, JSON.parse(written).time as number, id, method, url, 200, 1.5)).toBe(written);
      }),
      { numRuns: 500 },
    );
  });
});

describe('BatchedDestination', () => {
  it('writes the lines of up to 100 ms at once, in order, and at once past the batch size', async () => {
    const writes: string[] = [];
    const destination = new BatchedDestination({ write: (bytes: Buffer) => writes.push(bytes.toString('utf8')) });
    destination.write('a\n');
    destination.write('b\n');
    expect(writes).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(writes).toEqual(['a\nb\n']);
    const big = 'x'.repeat(20_000);
    destination.write(big);
    expect(writes).toEqual(['a\nb\n', big]);
    destination.write('c\n');
    destination.flushSync();
    expect(writes.join('')).toBe(`a\nb\n${big}c\n`);
  });

  it('keeps every byte of multi-byte lines, whatever their lengths, each batch in a buffer of its own', () => {
    const batches: Buffer[] = [];
    const destination = new BatchedDestination({ write: (bytes: Buffer) => batches.push(bytes) });
    const lines = Array.from({ length: 3000 }, (_, i) => `${i} ${'é漢🦆'.repeat(i % 50)} ${'y'.repeat((i * 37) % 3000)}\n`);
    lines.push(`${'🦆'.repeat(12_000)}\n`, 'after\n');
    for (const line of lines) destination.write(line);
    destination.flushSync();
    expect(Buffer.concat(batches).toString('utf8')).toBe(lines.join(''));
    expect(batches.length).toBeGreaterThan(10);
    expect(new Set(batches.map((b) => b.buffer)).size).toBe(batches.length);
  });
});
