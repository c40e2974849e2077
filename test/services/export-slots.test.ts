/**
 * The export's pages in shared slots (src/services/read-workers/page-slots.ts): a slot is taken again only
 * once the socket has sent its page, and the file that reaches a client over a real socket, read fast
 * or slowly, is byte for byte the file of the path without slots (`inject`, whose response keeps its
 * chunks, never gets slots).
 */
import http from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { PageSlots } from '../../src/services/read-workers/page-slots.ts';
import { createTestApp, entry, type TestContext } from '../helper.ts';

describe('PageSlots', () => {
  it('gives a slot again only once the response has sent the page in it', () => {
    let pending = 0;
    const slots = new PageSlots(() => pending);
    const a = slots.take()!;
    const b = slots.take()!;
    const c = slots.take()!;
    expect(new Set([a.index, b.index, c.index]).size).toBe(3);
    // All three reserved: none free, whatever has been sent.
    expect(slots.take()).toBeUndefined();
    slots.counts(new Uint8Array(10)); // the file's head
    const first = slots.chunk(a.index, 100);
    expect(first.buffer).toBe(a.slot.buffer);
    expect([first.byteOffset, first.length]).toEqual([a.slot.offset, 100]);
    // The first page (bytes 10-110) is still in the response: 50 bytes not sent.
    pending = 50;
    expect(slots.take()).toBeUndefined();
    // Once they are sent, its slot is free again.
    pending = 0;
    expect(slots.take()!.index).toBe(a.index);
    // A page that came as a buffer of its own gives its slot back at once.
    slots.release(b.index);
    expect(slots.take()!.index).toBe(b.index);
  });
});

const sqlite = process.env.TEST_DATABASE !== 'postgres';

describe.runIf(sqlite)('an export over a real socket', () => {
  let t: TestContext;
  let base: string;
  beforeAll(async () => {
    // 30 pages: most fit a slot, every fifth does not (its texts are five times as long).
    const many = Array.from({ length: 30_000 }, (_, i) => {
      const words = `Entry ${i} went to the market, "quoted", and came back with a comma, ${'a sock '.repeat(12)}`;
      return entry(Math.floor(i / 1000) % 5 === 4 ? words.repeat(5) : words, 1_700_300_000 + i);
    });
    t = await createTestApp({ entries: many });
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(() => t.close());
  afterEach(() => vi.restoreAllMocks());

  /** download reads the whole answer; `slowly` waits 20 ms between chunks after 300 ms without reading. */
  function download(path: string, slowly: boolean): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      http
        .get(`${base}${path}`, (res) => {
          const chunks: Buffer[] = [];
          if (slowly) {
            res.pause();
            setTimeout(() => res.resume(), 300);
          }
          res.on('data', (chunk: Buffer) => {
            chunks.push(chunk);
            if (slowly) {
              res.pause();
              setTimeout(() => res.resume(), 20);
            }
          });
          res.on('end', () => resolve(Buffer.concat(chunks)));
          res.on('error', reject);
        })
        .on('error', reject);
    });
  }

  it('takes no slot for an export of a few small pages', async () => {
    const take = vi.spyOn(PageSlots.prototype, 'take');
    const path = '/api/v1/nonsense?format=csv&after=1700300000&before=1700300500';
    const body = await download(path, false);
    expect(body.equals((await t.app.inject(path)).rawPayload)).toBe(true);
    expect(body.toString('utf8').trim().split('\r\n')).toHaveLength(1 + 499);
    expect(take).not.toHaveBeenCalled();
  });

  for (const format of ['csv', 'json', 'txt'] as const) {
    it(`sends the ${format} file of the path without slots, read fast and slowly`, { timeout: 30_000 }, async () => {
      const chunk = vi.spyOn(PageSlots.prototype, 'chunk');
      const own = vi.spyOn(PageSlots.prototype, 'counts');
      const path = `/api/v1/nonsense?format=${format}`;
      const expected = (await t.app.inject(path)).rawPayload;
      expect(chunk).not.toHaveBeenCalled();
      expect(expected.length).toBeGreaterThan(4_000_000);

      expect((await download(path, false)).equals(expected)).toBe(true);
      // Pages went through the slots, and the long ones on their own.
      expect(chunk.mock.calls.length).toBeGreaterThan(10);
      expect(own.mock.calls.length).toBeGreaterThan(5);

      chunk.mockClear();
      own.mockClear();
      expect((await download(path, true)).equals(expected)).toBe(true);
      expect(chunk).toHaveBeenCalled();
    });
  }
});
