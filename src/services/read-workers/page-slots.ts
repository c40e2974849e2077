/**
 * The buffer an export's pages travel in, from the worker to the socket, slot by slot.
 *
 * Without it every page reached the event loop as a new buffer (about 110 KB for a page of CSV),
 * garbage once sent. V8 frees such buffers only when it collects, and it starts a collection for
 * memory outside its heap only after tens of megabytes of it, so sent pages piled up and the process
 * grew over a few exports (`npm run bench:export` measures it). With slots, an export needs the same
 * few hundred kilobytes from its first page to its last.
 *
 * The worker writes a page into a free slot (worker.ts), and the event loop sends a view of it.
 * A slot is free again once the socket has sent its page: the bytes yielded so far, less what the
 * response has not sent yet (`pending`, its `writableLength`, which counts a write until the system
 * has taken all of it, and the head and chunk framing besides), is how much of the file has surely
 * left. That holds only when the pages go straight to a socket that keeps no reference to them once
 * written: the export route asks for slots only then (a socket of node:net, no stream between), and
 * not for `inject`, whose response keeps every chunk. A page that finds no free slot (a client
 * reading slowly) or that does not fit in one comes as a buffer of its own, as before.
 */
import type { PageSlot } from './worker.ts';

/**
 * Pages of fewer entries than this come in buffers of their own, as the first page does: an export's
 * first pages are small (formats/export.ts exportPageSize), and an export of a few of them (most
 * filtered ones) needs no slots, whose buffer a stream of small exports would make many of.
 */
export const SLOTTED_PAGE = 500;

/** Slots an export has: the page being sent, the page read ahead, and one still leaving the socket. */
const SLOTS = 3;
/** A slot's size: a page of CSV takes about 110 KB, of JSON about 150 KB; larger pages come on their own. */
const SLOT_BYTES = 256 * 1024;

export class PageSlots {
  /**
   * Made with the first slot taken: an export of small pages only (most filtered ones) needs none. Each task
   * the worker gets holds the buffer until the worker's next collection, which a stream of small
   * exports makes rare: with a buffer for every export the abuse benchmark grew by +121 and +166 MiB
   * (+81 and +94 without slots; +114, +76 and +50 with the buffer made here).
   */
  private buffer: SharedArrayBuffer | undefined;
  /**
   * For each slot: -1 when free; the file's length up to the end of its page, once that page is
   * yielded; Infinity while its page is being read or waits to be yielded.
   */
  private readonly ends: number[] = new Array<number>(SLOTS).fill(-1);
  /** Bytes of the file yielded so far. */
  private yielded = 0;

  /** `pending` is how many bytes the response has been given and not yet sent. */
  constructor(private readonly pending: () => number) {}

  /**
   * take reserves a free slot for the next page, or returns undefined when none is free. Call it only
   * when every chunk yielded so far has been written to the response: for an async generator read by
   * `Readable.from` and piped, after an `await` that follows the last `yield`.
   */
  take(): { index: number; slot: PageSlot } | undefined {
    const sent = this.yielded - this.pending();
    for (let index = 0; index < SLOTS; index++) {
      const end = this.ends[index]!;
      if (end === -1 || end <= sent) {
        this.ends[index] = Infinity;
        this.buffer ??= new SharedArrayBuffer(SLOTS * SLOT_BYTES);
        return { index, slot: { buffer: this.buffer, offset: index * SLOT_BYTES, size: SLOT_BYTES } };
      }
    }
    return undefined;
  }

  /** chunk is the view of slot `index`'s page of `length` bytes, counted as yielded. */
  chunk(index: number, length: number): Buffer {
    this.yielded += length;
    this.ends[index] = this.yielded;
    return Buffer.from(this.buffer!, index * SLOT_BYTES, length);
  }

  /** release frees slot `index` whose page came back empty or as a buffer of its own. */
  release(index: number): void {
    this.ends[index] = -1;
  }

  /** counts another chunk of the file, not from a slot, as yielded. */
  counts(chunk: Uint8Array): Uint8Array {
    this.yielded += chunk.length;
    return chunk;
  }
}
