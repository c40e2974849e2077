/**
 * The entries held ready to send, within a byte budget: each visible entry's prepared JSON with its
 * id and uuid beside it (the body's layout is formats/entry.ts's business alone). Found by uuid (the
 * by-UUID reads; the ones not asked for again go first) and by id (the random pick); when it is `complete`
 * it holds every visible entry, so a pick among its slots is a uniform pick and a miss is an answer.
 */
import { asciiBytesOf, type EntryJson } from '../../formats/entry.ts';

export interface CachedEntry {
  readonly id: number;
  readonly uuid: string;
  readonly json: EntryJson;
  /** The body's length in bytes when it is all ASCII (its length), else undefined. */
  readonly asciiBytes: number | undefined;
  /** What it is counted for against the budget. */
  readonly bytes: number;
  /** Its place in `slots`. */
  slot: number;
  /** Asked for by UUID since the eviction hand last passed it. */
  used: boolean;
}

/**
 * Bytes beside the body: the uuid string, the record, its places in two maps and the slot list,
 * estimated from V8's object layouts and rounded up, so that the budget bounds the heap it costs.
 */
const OVERHEAD = 260;

export class HotCache {
  private byUuid = new Map<string, CachedEntry>();
  private byId = new Map<number, CachedEntry>();
  private slots: CachedEntry[] = [];
  /** The eviction clock's hand: a place in `slots`. */
  private hand = 0;
  bytes = 0;
  /** Whether it holds every visible entry of the revision its owner has applied. */
  complete = false;

  constructor(
    readonly budget: number,
    private readonly templateSize: (json: Exclude<EntryJson, string>) => number,
  ) {}

  get size(): number {
    return this.slots.length;
  }

  /** weigh makes the cached form of an entry, or null when it could never fit. */
  weigh(id: number, uuid: string, json: EntryJson): CachedEntry | null {
    const asciiBytes = asciiBytesOf(json);
    const body = typeof json === 'string' ? (asciiBytes !== undefined || !/[^\x00-\xff]/.test(json) ? json.length : 2 * json.length) : this.templateSize(json);
    const bytes = body + OVERHEAD;
    if (bytes > this.budget) return null;
    return { id, uuid, json, asciiBytes, bytes, slot: -1, used: false };
  }

  /** fits tells whether `bytes` more fit the budget without letting any entry go. */
  fits(bytes: number): boolean {
    return this.bytes + bytes <= this.budget;
  }

  /**
   * find returns the entry with this uuid and marks it used. A mark, not a move to the end of a list:
   * deleting and setting a key again in a Map of a hundred thousand costs V8 a rehash of the table
   * every few calls.
   */
  find(uuid: string): CachedEntry | undefined {
    const found = this.byUuid.get(uuid);
    if (found !== undefined) found.used = true;
    return found;
  }

  /** findId returns the entry with this id, leaving its place in the order as it is (random picks say nothing of heat). */
  findId(id: number): CachedEntry | undefined {
    return this.byId.get(id);
  }

  /** at returns slot `i` (0 ≤ i < size), for a uniform pick while complete. */
  at(i: number): CachedEntry {
    return this.slots[i]!;
  }

  /**
   * put adds an entry (replacing the one with its uuid), letting entries go while over budget by the
   * clock: the hand walks the slots, sparing once each entry asked for since it last passed (a
   * second chance), so what is asked for again stays and what is not goes. Letting any go means the
   * cache is no longer complete.
   */
  put(entry: CachedEntry): void {
    this.remove(entry.uuid);
    entry.slot = this.slots.length;
    this.slots.push(entry);
    this.byUuid.set(entry.uuid, entry);
    this.byId.set(entry.id, entry);
    this.bytes += entry.bytes;
    if (this.bytes <= this.budget) return;
    this.complete = false;
    // Two turns at most: the first clears every mark.
    for (let steps = 2 * this.slots.length; this.bytes > this.budget && steps > 0; steps--) {
      if (this.hand >= this.slots.length) this.hand = 0;
      const candidate = this.slots[this.hand]!;
      if (candidate === entry || candidate.used) {
        candidate.used = false;
        this.hand++;
      } else this.remove(candidate.uuid); // the last slot moves into the hand's place
    }
  }

  /** remove lets the entry with this uuid go, if held. */
  remove(uuid: string): void {
    const found = this.byUuid.get(uuid);
    if (found === undefined) return;
    this.byUuid.delete(uuid);
    this.byId.delete(found.id);
    // The last slot takes the freed one: removal costs the same at any size.
    const last = this.slots.pop()!;
    if (last !== found) {
      last.slot = found.slot;
      this.slots[found.slot] = last;
    }
    this.bytes -= found.bytes;
  }

  /** clear lets everything go (the maps are replaced, not emptied one by one). */
  clear(): void {
    this.byUuid = new Map();
    this.byId = new Map();
    this.slots = [];
    this.bytes = 0;
    this.complete = false;
  }
}
