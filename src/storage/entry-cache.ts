/**
 * The entry cache: what the two hottest endpoints (a random entry, an entry by UUID) serve without
 * asking the database, keyed by the change revision like every cache here.
 *
 * - The snapshot: every visible entry of one revision, each already encoded (its response body, or a
 *   template completed per request where the text has server variables), packed into pages of one
 *   string each, with a hash index by UUID. It is built in the background, a page of entries at a
 *   time so that no step holds the event loop for long, and only used while the revision it was built
 *   at is the current one. Above its byte budget it is not built, and the database answers.
 * - The lookup cache: the entries asked for by UUID, least recently used first out, within its own
 *   byte budget, emptied when the revision changes. It answers while there is no snapshot.
 *
 * Correctness rests on the revision (src/storage/revision.ts): a change by this process invalidates
 * the revision, so the next request re-reads it, finds it changed, and no longer uses anything built
 * before (hidden entries are gone at once); a change by another process shows once the revision is
 * re-read, within a second. Picks from the snapshot are uniform over the visible entries, as the
 * database path's are.
 */
import { isAscii } from '../domain/text.ts';
import type { ServerVariables } from '../domain/variables.ts';
import type { EntryRecord, EntryStore } from './entries.ts';
import type { RevisionCache } from './revision.ts';
import type { VariableStore } from './variables.ts';

/** An entry ready to send: its body, or a template of the caller's to complete. */
export type PreparedEntry<T> = string | T;

/** Encodes entries for one revision's server variables: the body, or a template when it varies. */
export type EntryEncoder<T> = (entry: EntryRecord) => string | T;

export interface EntryCacheOptions<T> {
  /** makeEncoder returns the encoder for a set of server variables. */
  makeEncoder: (variables: ServerVariables) => EntryEncoder<T>;
  /** templateSize estimates the bytes a template holds. */
  templateSize: (template: T) => number;
  /** Byte budget of the snapshot; 0 never builds one. */
  snapshotBytes: number;
  /** Byte budget of the lookup cache; 0 keeps none. */
  lookupBytes: number;
}

export interface EntryCacheStats {
  /** Bytes held by the snapshot in use (or being built), 0 when there is none. */
  snapshotBytes: number;
  /** Entries in the snapshot in use. */
  snapshotEntries: number;
  /** Bytes held by the lookup cache. */
  lookupBytes: number;
  lookupEntries: number;
}

const PAGE_BITS = 11;
/** Entries per page: one string each. */
const PAGE_SIZE = 1 << PAGE_BITS;
/** Rows read from the database at a time (one step of the build, a few milliseconds). */
const READ_SIZE = 1024;
/** Entries hashed into the index between two yields to the event loop. */
const INDEX_SLICE = 65_536;
/** After a failed build, the wait before the next attempt. */
const RETRY_MS = 5000;
/** `{"uuid":"`, the start of every encoded entry, after which its UUID is stored. */
const UUID_AT = 9;
/**
 * The flag on a templated entry's start offset. A pick then needs no other read to tell a body from a
 * template: one random read less into memory that a million entries spread over megabytes, which
 * cost about a microsecond a pick there (docs/performance.md). Pages stay far below 1 GiB, the
 * room the two flags leave.
 */
const TEMPLATED = 0x8000_0000;
/**
 * The flag on the start offset of a body that is all ASCII, whose length in UTF-8 bytes is then its
 * length in characters: the response's Content-Length without a pass over the body.
 */
const ASCII = 0x4000_0000;
const OFFSET = 0x3fff_ffff;
const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** A character beyond Latin-1: a body holding one is kept with the wide texts. */
const WIDE = /[^\x00-\xff]/;

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** hashUuid is FNV-1a over the UUID's characters: every character counts, whatever the UUID version. */
function hashUuid(uuid: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < uuid.length; i++) hash = Math.imul(hash ^ uuid.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}

/**
 * Texts packed PAGE_SIZE to a string, with per page PAGE_SIZE + 1 offsets (UTF-16 units) into it.
 * Bodies are kept as strings, not bytes: a string body goes out with the response's header in one
 * write, a byte body in a second buffer of a gathered write, which cost several per cent more CPU a
 * request (docs/performance.md). A page whose texts are all Latin-1 is a one-byte string (a byte a
 * character, as UTF-8 bytes would take for the ASCII most entries are); the rest, with emoji or other
 * scripts, go to pages of their own, two bytes a character, so that they do not double the others.
 */
class TextPages {
  readonly pages: string[] = [];
  readonly offsets: Uint32Array[] = [];
  /** Per text, in order, hashUuid of its entry's UUID. */
  hashes = new Uint32Array(PAGE_SIZE);
  count = 0;
  /** Bytes of the sealed pages and their offsets. */
  bytes = 0;
  private texts: string[] = [];
  private pageOffsets = new Uint32Array(PAGE_SIZE + 1);
  private length = 0;

  /** `wide`: whether the texts hold characters beyond Latin-1 (two bytes a character). */
  constructor(private readonly wide: boolean) {}

  /** Bytes of the page being filled. */
  get pending(): number {
    return (this.wide ? 2 : 1) * this.length;
  }

  /** add appends the text of the entry with this UUID; `flag` is set on its start offset. */
  add(text: string, uuid: string, flag: number): void {
    this.pageOffsets[this.texts.length] = this.length + flag;
    this.texts.push(text);
    this.length += text.length;
    if (this.count === this.hashes.length) {
      const grown = new Uint32Array(this.hashes.length * 2);
      grown.set(this.hashes);
      this.hashes = grown;
    }
    this.hashes[this.count++] = hashUuid(uuid);
    if (this.texts.length === PAGE_SIZE) this.seal();
  }

  /** seal closes the page being filled, if it holds any text. */
  seal(): void {
    if (this.texts.length === 0) return;
    this.pageOffsets.fill(this.length, this.texts.length);
    const joined = this.texts.join('');
    // Latin-1 texts may arrive as two-byte strings; through Latin-1 bytes the page is one-byte for sure.
    const page = this.wide ? joined : Buffer.from(joined, 'latin1').toString('latin1');
    this.pages.push(page);
    this.offsets.push(this.pageOffsets);
    this.bytes += (this.wide ? 2 : 1) * page.length + this.pageOffsets.byteLength;
    this.texts = [];
    this.pageOffsets = new Uint32Array(PAGE_SIZE + 1);
    this.length = 0;
  }

  /** start is text `k`'s start offset, its flags included. */
  start(k: number): number {
    return this.offsets[k >>> PAGE_BITS]![k & (PAGE_SIZE - 1)]!;
  }

  /** text is text `k`, whose start offset is `start`. */
  text(k: number, start: number): string {
    return this.pages[k >>> PAGE_BITS]!.slice(start & OFFSET, this.offsets[k >>> PAGE_BITS]![(k & (PAGE_SIZE - 1)) + 1]! & OFFSET);
  }

  /** asciiLength is text `k`'s length when it is flagged ASCII, else undefined. */
  asciiLength(k: number): number | undefined {
    const start = this.start(k);
    if ((start & ASCII) === 0 || start >= TEMPLATED) return undefined;
    return (this.offsets[k >>> PAGE_BITS]![(k & (PAGE_SIZE - 1)) + 1]! & OFFSET) - (start & OFFSET);
  }

  /** hasUuid tells whether text `k` is the entry with this UUID (every text starts `{"uuid":"<uuid>`). */
  hasUuid(k: number, uuid: string): boolean {
    const page = this.pages[k >>> PAGE_BITS]!;
    const at = (this.start(k) & OFFSET) + UUID_AT;
    for (let c = 0; c < 36; c++) if (page.charCodeAt(at + c) !== uuid.charCodeAt(c)) return false;
    return true;
  }
}

/**
 * The visible entries of one revision, encoded: first those whose text is Latin-1 (and every
 * templated one), then the wide ones, each kind in its own pages.
 */
export class EntrySnapshot<T> {
  private readonly latinCount: number;

  constructor(
    readonly revision: number,
    readonly count: number,
    /** Latin-1 bodies; a templated entry has only its `{"uuid":"…` start here, flagged TEMPLATED. */
    private readonly latin: TextPages,
    /** Bodies with characters beyond Latin-1. */
    private readonly wide: TextPages,
    /** The templates, in entry order. */
    private readonly templates: readonly T[],
    /**
     * Per entry, 1 + the number of its template in `templates`, 0 for an entry without one; empty
     * when there are no templates. Read only for an entry whose start offset says it is templated.
     */
    private readonly templateOf: Int32Array,
    /** Open addressing over hashUuid: entry index + 1, 0 for a free slot. */
    private readonly index: Int32Array,
    readonly bytes: number,
  ) {
    this.latinCount = latin.count;
  }

  /** at returns entry `i` (0 ≤ i < count): its body, or its template. */
  at(i: number): string | T {
    const latin = i < this.latinCount;
    const pages = latin ? this.latin : this.wide;
    const k = latin ? i : i - this.latinCount;
    const start = pages.start(k);
    if (start >= TEMPLATED) return this.templates[this.templateOf[i]! - 1]!;
    return pages.text(k, start);
  }

  /**
   * asciiLength returns the length in bytes of entry `i`'s body when the body is all ASCII (its
   * length), else undefined. It reads what `at(i)` has just read.
   */
  asciiLength(i: number): number | undefined {
    return i < this.latinCount ? this.latin.asciiLength(i) : undefined;
  }

  /** find returns the index of the entry with this lower-case UUID, or -1. */
  find(uuid: string): number {
    if (uuid.length !== 36) return -1;
    const mask = this.index.length - 1;
    for (let slot = hashUuid(uuid) & mask; ; slot = (slot + 1) & mask) {
      const found = this.index[slot]!;
      if (found === 0) return -1;
      if (this.uuidAt(found - 1, uuid)) return found - 1;
    }
  }

  private uuidAt(i: number, uuid: string): boolean {
    return i < this.latinCount ? this.latin.hasUuid(i, uuid) : this.wide.hasUuid(i - this.latinCount, uuid);
  }
}

/** One revision's entries asked for by UUID, least recently used first, within a byte budget. */
class LookupCache<T> {
  private revision = -1;
  private readonly entries = new Map<string, { value: string | T; bytes: number }>();
  bytes = 0;

  constructor(
    private readonly budget: number,
    private readonly templateSize: (template: T) => number,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  get(revision: number, uuid: string): string | T | undefined {
    if (revision !== this.revision) return undefined;
    const found = this.entries.get(uuid);
    if (found === undefined) return undefined;
    // Most recently used last: Map keeps insertion order.
    this.entries.delete(uuid);
    this.entries.set(uuid, found);
    return found.value;
  }

  set(revision: number, uuid: string, value: string | T): void {
    if (this.budget === 0) return;
    if (revision !== this.revision) {
      this.entries.clear();
      this.bytes = 0;
      this.revision = revision;
    }
    if (this.entries.has(uuid)) return;
    // The key and the value as UTF-16 strings, and the Map entry around them.
    const bytes = 2 * uuid.length + (typeof value === 'string' ? 2 * value.length : this.templateSize(value)) + 120;
    this.entries.set(uuid, { value, bytes });
    this.bytes += bytes;
    for (const [key, entry] of this.entries) {
      if (this.bytes <= this.budget) break;
      this.entries.delete(key);
      this.bytes -= entry.bytes;
    }
  }

  clear(): void {
    this.entries.clear();
    this.bytes = 0;
  }
}

type BuildState =
  | { kind: 'idle' }
  | { kind: 'building'; revision: number; bytes: number }
  | { kind: 'over-budget'; revision: number }
  | { kind: 'failed'; revision: number; at: number };

/** EntryCache serves random and by-UUID entries from the snapshot or the lookup cache, else the database. */
export class EntryCache<T> {
  private snapshot: EntrySnapshot<T> | null = null;
  private state: BuildState = { kind: 'idle' };
  private closed = false;
  private readonly lookups: LookupCache<T>;

  constructor(
    private readonly cache: RevisionCache,
    private readonly entries: EntryStore,
    private readonly variables: VariableStore,
    private readonly options: EntryCacheOptions<T>,
  ) {
    this.lookups = new LookupCache(options.lookupBytes, options.templateSize);
  }

  /**
   * snapshotNow returns the snapshot when it is known, without waiting, to be of the current
   * revision; else null, and a snapshot of the current revision is built in the background.
   */
  snapshotNow(): EntrySnapshot<T> | null {
    const revision = this.cache.peek();
    if (revision === null) return null;
    const snapshot = this.snapshot;
    if (snapshot !== null && snapshot.revision === revision) return snapshot;
    this.maybeBuild(revision);
    return null;
  }

  /** random returns a visible entry picked uniformly, or null when there is none. */
  async random(pick: (length: number) => number): Promise<PreparedEntry<T> | null> {
    const revision = await this.cache.current();
    const snapshot = this.usable(revision);
    if (snapshot !== null) return snapshot.count === 0 ? null : snapshot.at(pick(snapshot.count));
    const entry = await this.entries.random(pick);
    if (entry === null) return null;
    return (await this.encoder())(entry);
  }

  /** find returns the visible entry with this lower-case UUID and the revision it is of, or null. */
  async find(uuid: string): Promise<{ entry: PreparedEntry<T>; revision: number } | null> {
    const revision = await this.cache.current();
    const snapshot = this.usable(revision);
    if (snapshot !== null) {
      const i = snapshot.find(uuid);
      return i === -1 ? null : { entry: snapshot.at(i), revision };
    }
    const cached = this.lookups.get(revision, uuid);
    if (cached !== undefined) return { entry: cached, revision };
    const entry = await this.entries.findVisible(uuid);
    if (entry === null) return null;
    const encoded = (await this.encoder())(entry);
    // Only if no change came in meanwhile: the entry read may be newer than `revision`.
    if ((await this.cache.current()) === revision) this.lookups.set(revision, uuid, encoded);
    return { entry: encoded, revision };
  }

  stats(): EntryCacheStats {
    const building = this.state.kind === 'building' ? this.state.bytes : 0;
    return {
      snapshotBytes: (this.snapshot?.bytes ?? 0) + building,
      snapshotEntries: this.snapshot?.count ?? 0,
      lookupBytes: this.lookups.bytes,
      lookupEntries: this.lookups.size,
    };
  }

  /** close drops everything and stops a build in progress. */
  close(): void {
    this.closed = true;
    this.snapshot = null;
    this.lookups.clear();
  }

  private usable(revision: number): EntrySnapshot<T> | null {
    const snapshot = this.snapshot;
    if (snapshot !== null && snapshot.revision === revision) return snapshot;
    this.maybeBuild(revision);
    return null;
  }

  private encoder(): Promise<EntryEncoder<T>> {
    return this.cache.get('entry-encoder', async () => this.options.makeEncoder(await this.variables.values()));
  }

  /** maybeBuild starts building a snapshot for `revision`, the cache's current one, unless one is under way. */
  private maybeBuild(revision: number): void {
    if (this.closed || this.options.snapshotBytes === 0) return;
    const state = this.state;
    if (state.kind === 'building') return;
    // Built from a revision this process has not seen yet: it is used once the revision is re-read.
    if (this.snapshot !== null && this.snapshot.revision > revision) return;
    if (state.kind === 'over-budget' && state.revision >= revision) return;
    if (state.kind === 'failed' && state.revision >= revision && Date.now() - state.at < RETRY_MS) return;
    const building = { kind: 'building' as const, revision, bytes: 0 };
    this.state = building;
    // A snapshot of an older revision is of no use any more: let its memory go before building.
    this.snapshot = null;
    this.build(building).then(
      (snapshot) => {
        if (this.state !== building) return;
        this.state = snapshot === null ? { kind: 'over-budget', revision: building.revision } : { kind: 'idle' };
        if (snapshot !== null && !this.closed) {
          this.snapshot = snapshot;
          // The snapshot answers every lookup from now on.
          this.lookups.clear();
        }
      },
      () => {
        // The revision changed while reading, or the database failed: the database answers meanwhile.
        if (this.state === building) this.state = { kind: 'failed', revision, at: Date.now() };
      },
    );
  }

  /**
   * build reads every visible entry, a page at a time, and encodes it. It returns null when the
   * entries do not fit the budget, and throws when the revision changed while it read (the next
   * request starts a build of the new one).
   */
  private async build(progress: { revision: number; bytes: number }): Promise<EntrySnapshot<T> | null> {
    const budget = this.options.snapshotBytes;
    const startRevision = await this.entries.readRevision();
    const encode = this.options.makeEncoder(await this.variables.readValues());
    const latin = new TextPages(false);
    const wide = new TextPages(true);
    const templates: T[] = [];
    /** The entry number of each template (among the Latin-1 texts, which come first). */
    const templated: number[] = [];
    let templateBytes = 0;
    for (let after: number | null = 0; after !== null; ) {
      if (this.closed) throw new Error('entry cache closed');
      const { next, visible } = await this.entries.page(after, READ_SIZE);
      after = next;
      for (const entry of visible) {
        // The index compares stored UUIDs character for character with the canonical form that requests use.
        if (!CANONICAL_UUID.test(entry.uuid)) throw new Error('an entry has a UUID not in canonical form');
        const encoded = encode(entry);
        if (typeof encoded !== 'string') {
          templates.push(encoded);
          templated.push(latin.count);
          templateBytes += this.options.templateSize(encoded) + 32;
          latin.add(`{"uuid":"${entry.uuid}`, entry.uuid, TEMPLATED);
        } else if (isAscii(encoded)) latin.add(encoded, entry.uuid, ASCII);
        else if (WIDE.test(encoded)) wide.add(encoded, entry.uuid, 0);
        else latin.add(encoded, entry.uuid, 0);
      }
      const count = latin.count + wide.count;
      progress.bytes = latin.bytes + wide.bytes + templateBytes;
      if (progress.bytes + latin.pending + wide.pending + 4 * count > budget) return null;
      await yieldToEventLoop();
    }
    latin.seal();
    wide.seal();
    const count = latin.count + wide.count;
    let slots = 2;
    while (slots < count * 2) slots *= 2;
    progress.bytes = latin.bytes + wide.bytes + templateBytes + 4 * slots + (templates.length > 0 ? 4 * count : 0);
    if (progress.bytes > budget) return null;
    const index = new Int32Array(slots);
    const mask = slots - 1;
    for (let i = 0; i < count; i++) {
      const hash = i < latin.count ? latin.hashes[i]! : wide.hashes[i - latin.count]!;
      let slot = hash & mask;
      while (index[slot] !== 0) slot = (slot + 1) & mask;
      index[slot] = i + 1;
      if (i % INDEX_SLICE === INDEX_SLICE - 1) await yieldToEventLoop();
    }
    latin.hashes = wide.hashes = new Uint32Array(0);
    // Nothing changed while the pages were read one by one: the snapshot is that revision's.
    if ((await this.entries.readRevision()) !== startRevision) throw new Error('the revision changed during the build');
    const templateOf = new Int32Array(templates.length > 0 ? count : 0);
    for (let t = 0; t < templated.length; t++) templateOf[templated[t]!] = t + 1;
    return new EntrySnapshot(startRevision, count, latin, wide, templates, templateOf, index, progress.bytes);
  }
}
