/**
 * What the galaxy endpoint serves: the stored answer of the current fit (answer.ts), streamed chunk
 * by chunk from the database, with the entries changed since it was written applied on the way, so
 * that a request costs the same first byte at any size and the process holds no copy of the galaxy.
 *
 * - The *overlay* of an answer is what changed since it was written: the uuids of the entries the
 *   change log names after the answer's revision (created, edited, hidden, shown again, deleted),
 *   each looked up as it is now. Every one of them is left out of the chunks that hold it, and those
 *   that are visible and placed are sent after the chunks. It is built once per layout version and
 *   entries revision and shared by the requests, within a bound (MAX_OVERLAY_ENTRIES, and the byte
 *   budget GALAXY_CACHE_BYTES for its rendered stars); the computation writes the answer again well
 *   before that bound.
 * - Without a usable answer (none yet for this fit, an overlay over its bound, a change log pruned
 *   past the answer) the stars are walked from the database page by page, as before answers were
 *   stored: the same stars, in uuid order.
 * - A body under SMALL_BODY_BYTES is sent whole, with its length; a larger one is streamed.
 */
import { Readable } from 'node:stream';
import { setImmediate as giveWay } from 'node:timers/promises';
import { csvRecord, GALAXY_BODY_SHAPE, GALAXY_CSV_HEADER, galaxyChunks, jsonItem, renderPages, type GalaxyFormat } from '../../formats/galaxy.ts';
import type { AnswerChunkRange, GalaxyAnswer, GalaxyLayout, GalaxyStore } from '../../storage/galaxy.ts';
import { REWRITE_AFTER_CHANGES } from './answer.ts';

/** Entry changes since the answer beyond which it is not used (the computation rewrites it at REWRITE_AFTER_CHANGES). */
export const MAX_OVERLAY_ENTRIES = 2 * REWRITE_AFTER_CHANGES;
/** Changes read from the log at a time. */
const LOG_PAGE = 2000;
/** Bodies up to this size are assembled and sent with their length. */
export const SMALL_BODY_BYTES = 1 << 20;
/** Stars rendered between two pauses when building an overlay. */
const RENDER_PAGE = 2000;

interface Overlay {
  key: string;
  /** Per chunk (seq), the uuids to leave out of it. */
  removedBySeq: Map<number, Set<string>>;
  /** The visible, placed stars among the changed entries, rendered in each format (JSON objects each followed by a comma). */
  added: Record<GalaxyFormat, Buffer>;
  stars: number;
  bytes: number;
}

/** What a request is answered with: what identifies it (for its ETag), and its body in a format. */
export interface GalaxyView {
  tag: string;
  /** The body: whole (small) or a stream; `head` only tells whether to stream it at all. */
  body(format: GalaxyFormat): Promise<Buffer | Readable>;
}

export class GalaxyBodies {
  private answer: { fit: number; version: number; answer: Promise<{ answer: GalaxyAnswer; ranges: Record<GalaxyFormat, AnswerChunkRange[]> } | null> } | null = null;
  private overlay: { key: string; overlay: Promise<Overlay | null> } | null = null;
  private held = { bytes: 0, stars: 0 };

  constructor(
    private readonly store: GalaxyStore,
    private readonly revision: () => Promise<number>,
    /** Byte budget of an overlay's rendered stars; an overlay over it is not used. */
    private readonly budget: number,
    /** Bodies up to this size are sent whole, with their length. */
    private readonly smallBody = SMALL_BODY_BYTES,
  ) {}

  /** bytes is what the overlay in use holds. */
  get bytes(): number {
    return this.held.bytes;
  }

  /** stars is the number of stars the overlay in use adds. */
  get stars(): number {
    return this.held.stars;
  }

  /** view returns what to serve for `layout` now. */
  async view(layout: GalaxyLayout): Promise<GalaxyView> {
    const revision = await this.revision();
    const tag = `galaxy-${layout.revision}.${layout.version}-r${revision}-s${GALAXY_BODY_SHAPE}`;
    const stored = await this.answerOf(layout);
    const overlay = stored === null ? null : await this.overlayOf(stored.answer, stored.ranges, layout, revision);
    if (stored === null || overlay === null) {
      return { tag, body: (format) => sized(galaxyChunks(format, renderPages(format, this.store.pointsByUuid(layout.fit))), this.smallBody) };
    }
    return { tag, body: (format) => sized(this.stream(stored.answer, stored.ranges[format], overlay, format), this.smallBody) };
  }

  /** answerOf reads the stored answer of the layout's fit and where its chunks start, once per layout version. */
  private answerOf(layout: GalaxyLayout) {
    if (this.answer?.fit !== layout.fit || this.answer.version !== layout.version) {
      const before = this.answer?.answer;
      const answer = (async () => {
        const found = await this.store.answer(layout.fit);
        if (found === null) return null;
        // An answer's chunks do not change: the ranges of the one already read are kept.
        const previous = before === undefined ? null : await before.catch(() => null);
        if (previous?.answer.id === found.id) return previous;
        const [csv, json] = [await this.store.answerRanges(found.id, 'csv'), await this.store.answerRanges(found.id, 'json')];
        return { answer: found, ranges: { csv, json } };
      })();
      this.answer = { fit: layout.fit, version: layout.version, answer };
      answer.catch(() => {
        if (this.answer?.answer === answer) this.answer = null;
      });
    }
    return this.answer.answer;
  }

  /** overlayOf builds the overlay of `answer` for the layout version and entries revision, once for all requests. */
  private overlayOf(answer: GalaxyAnswer, ranges: Record<GalaxyFormat, AnswerChunkRange[]>, layout: GalaxyLayout, revision: number): Promise<Overlay | null> {
    const key = `${answer.id}/${layout.version}/${revision}`;
    if (this.overlay?.key !== key) {
      const overlay = this.buildOverlay(key, answer, ranges.csv, layout);
      this.overlay = { key, overlay };
      overlay.then(
        (built) => {
          if (this.overlay?.overlay === overlay) this.held = { bytes: built?.bytes ?? 0, stars: built?.stars ?? 0 };
        },
        () => {
          if (this.overlay?.overlay === overlay) this.overlay = null;
        },
      );
    }
    return this.overlay.overlay;
  }

  private async buildOverlay(key: string, answer: GalaxyAnswer, ranges: readonly AnswerChunkRange[], layout: GalaxyLayout): Promise<Overlay | null> {
    const changed = new Set<string>();
    for (let after = answer.revision; ; ) {
      const page = await this.store.entryKeysChangedAfter(after, LOG_PAGE);
      for (const uuid of page.keys) changed.add(uuid);
      if (changed.size > MAX_OVERLAY_ENTRIES) return null;
      if (!page.full) break;
      after = page.last;
      await giveWay();
    }
    // Read after the log: pruning raises the floor before it removes changes.
    if ((await this.store.changesFloor()) > answer.revision) return null;
    const uuids = [...changed].sort();
    const removedBySeq = new Map<number, Set<string>>();
    // Chunks follow the database's order of uuids; should a collation order them otherwise than
    // JavaScript does, every chunk is searched for every changed star.
    const ordered = inOrder(ranges);
    for (const range of ordered ? [] : ranges) removedBySeq.set(range.seq, changed);
    for (const uuid of ordered ? uuids : []) {
      const seq = chunkOf(ranges, uuid);
      if (seq === -1) continue;
      let set = removedBySeq.get(seq);
      if (set === undefined) removedBySeq.set(seq, (set = new Set()));
      set.add(uuid);
    }
    const now = await this.store.entriesNow(layout.fit, uuids);
    now.sort((a, b) => (a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0));
    const csv: string[] = [];
    const json: string[] = [];
    let bytes = 0;
    for (const entry of now) {
      if (!entry.visible || entry.point === null) continue;
      const record = csvRecord(entry.point);
      const item = `${jsonItem(entry.point)},`;
      csv.push(record);
      json.push(item);
      bytes += record.length + item.length;
      if (bytes > this.budget) return null;
      if (csv.length % RENDER_PAGE === 0) await giveWay();
    }
    return {
      key,
      removedBySeq,
      added: { csv: Buffer.from(csv.join(''), 'latin1'), json: Buffer.from(json.join(''), 'latin1') },
      stars: csv.length,
      bytes: bytes + uuids.length * 48,
    };
  }

  /** stream sends the answer's chunks without the changed stars, then the changed stars as they are now. */
  private async *stream(answer: GalaxyAnswer, ranges: readonly AnswerChunkRange[], overlay: Overlay, format: GalaxyFormat): AsyncGenerator<Buffer> {
    const json = format === 'json';
    yield Buffer.from(json ? '[' : GALAXY_CSV_HEADER);
    let first = true;
    // JSON objects are stored each followed by a comma: a piece goes without its last one, and after one.
    const piece = function* (bytes: Buffer): Generator<Buffer> {
      if (bytes.length === 0) return;
      if (!json) {
        yield bytes;
        return;
      }
      if (!first) yield COMMA;
      first = false;
      yield bytes.subarray(0, bytes.length - 1);
    };
    for (const range of ranges) {
      const bytes = await this.store.answerChunk(answer.id, format, range.seq);
      // Dropped by the computation two answers later: this request took longer than a whole rewrite.
      if (bytes === null) throw new Error('The stored galaxy answer was replaced while it was being sent.');
      const removed = overlay.removedBySeq.get(range.seq);
      yield* piece(removed === undefined ? bytes : without(bytes, format, removed));
    }
    yield* piece(overlay.added[format]);
    if (json) yield Buffer.from(']');
  }
}

const COMMA = Buffer.from(',');
const CRLF = Buffer.from('\r\n');
const OBJECT_END = Buffer.from('},');
const UUID_LENGTH = 36;

/** inOrder tells whether chunk ranges are in JavaScript's order of strings, one after the other. */
function inOrder(ranges: readonly AnswerChunkRange[]): boolean {
  return ranges.every((range, i) => range.firstUuid <= range.lastUuid && (i === 0 || ranges[i - 1]!.lastUuid < range.firstUuid));
}

/** chunkOf finds the chunk whose uuid range holds `uuid`, or -1 (ranges are in uuid order). */
function chunkOf(ranges: readonly AnswerChunkRange[], uuid: string): number {
  let low = 0;
  let high = ranges.length - 1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    const range = ranges[middle]!;
    if (uuid < range.firstUuid) high = middle - 1;
    else if (uuid > range.lastUuid) low = middle + 1;
    else return range.seq;
  }
  return -1;
}

/** without copies a chunk without the records of `removed` (one pass over its records). */
function without(bytes: Buffer, format: GalaxyFormat, removed: ReadonlySet<string>): Buffer {
  const parts: Buffer[] = [];
  let kept = 0;
  // A CSV record is `\r\n<uuid>,…` up to the next CRLF; a JSON one `{"uuid":"<uuid>",…},`.
  const uuidAt = format === 'csv' ? 2 : 9;
  for (let at = 0; at < bytes.length; ) {
    let end: number;
    if (format === 'csv') {
      end = bytes.indexOf(CRLF, at + 2);
      if (end === -1) end = bytes.length;
    } else {
      end = bytes.indexOf(OBJECT_END, at) + 2;
      if (end === 1) end = bytes.length;
    }
    if (removed.has(bytes.toString('latin1', at + uuidAt, at + uuidAt + UUID_LENGTH))) {
      if (at > kept) parts.push(bytes.subarray(kept, at));
      kept = end;
    }
    at = end;
  }
  if (kept === 0) return bytes;
  if (kept < bytes.length) parts.push(bytes.subarray(kept));
  return Buffer.concat(parts);
}

/**
 * sized reads a body up to `small` bytes: a smaller one is returned whole (sent with its length),
 * a larger one as a stream of what was read and the rest.
 */
async function sized(pieces: AsyncIterable<Buffer | string>, small: number): Promise<Buffer | Readable> {
  const iterator = pieces[Symbol.asyncIterator]();
  const read: Buffer[] = [];
  let length = 0;
  for (;;) {
    const next = await iterator.next();
    if (next.done === true) return Buffer.concat(read);
    const piece = typeof next.value === 'string' ? Buffer.from(next.value) : next.value;
    read.push(piece);
    length += piece.length;
    if (length > small) break;
  }
  async function* rest(): AsyncGenerator<Buffer | string> {
    yield* read;
    for (;;) {
      const next = await iterator.next();
      if (next.done === true) return;
      yield next.value;
    }
  }
  const stream = Readable.from(rest(), { objectMode: false });
  // A request that goes away ends the walk (and its database reads) at the next piece.
  stream.on('close', () => void iterator.return?.(undefined));
  return stream;
}
