/**
 * The entry cache: what the two hottest endpoints (a random entry, an entry by UUID) serve without
 * asking the database, keyed by the change revision like every cache here.
 *
 * - The snapshot: every visible entry of one revision, each already encoded (its response body, or a
 *   template completed per request where the text has server variables), packed into pages of one
 *   buffer each, with a hash index by UUID. It is built in the background, a page of entries at a
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
import type { ServerVariables } from '../domain/variables.ts';
import type { EntryRecord, EntryStore } from './entries.ts';
import type { RevisionCache } from './revision.ts';
import type { VariableStore } from './variables.ts';

/** An entry ready to send: its body (bytes or text), or a template of the caller's to complete. */
export type PreparedEntry<T> = Buffer | string | T;

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
/** Entries per page: one database read and one buffer each. */
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
 * cost about a microsecond a pick there (docs/performance.md). Pages stay far below 2 GiB.
 */
const TEMPLATED = 0x8000_0000;
const OFFSET = 0x7fff_ffff;
const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** hashUuid is FNV-1a over the UUID's characters: every character counts, whatever the UUID version. */
function hashUuid(uuid: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < uuid.length; i++) hash = Math.imul(hash ^ uuid.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}

/** The visible entries of one revision, encoded. */
export class EntrySnapshot<T> {
  constructor(
    readonly revision: number,
    readonly count: number,
    /** Encoded entries, PAGE_SIZE per page; a templated entry has only its `{"uuid":"…` start here. */
    private readonly pages: readonly Buffer[],
    /** Per page, PAGE_SIZE + 1 byte offsets into the page; a templated entry's start has TEMPLATED set. */
    private readonly offsets: readonly Uint32Array[],
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
  ) {}

  /** at returns entry `i` (0 ≤ i < count): its body, or its template. */
  at(i: number): Buffer | T {
    const offsets = this.offsets[i >>> PAGE_BITS]!;
    const local = i & (PAGE_SIZE - 1);
    const start = offsets[local]!;
    if (start >= TEMPLATED) return this.templates[this.templateOf[i]! - 1]!;
    return this.pages[i >>> PAGE_BITS]!.subarray(start, offsets[local + 1]! & OFFSET);
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
    const page = this.pages[i >>> PAGE_BITS]!;
    const start = (this.offsets[i >>> PAGE_BITS]![i & (PAGE_SIZE - 1)]! & OFFSET) + UUID_AT;
    for (let k = 0; k < 36; k++) if (page[start + k] !== uuid.charCodeAt(k)) return false;
    return true;
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
    const pages: Buffer[] = [];
    const offsets: Uint32Array[] = [];
    const templates: T[] = [];
    /** The entry number of each template. */
    const templated: number[] = [];
    let hashes = new Uint32Array(PAGE_SIZE);
    let count = 0;
    // The page being filled: bodies and their byte offsets.
    let bodies: string[] = [];
    let pageOffsets = new Uint32Array(PAGE_SIZE + 1);
    let pageBytes = 0;
    const seal = () => {
      pageOffsets.fill(pageBytes, bodies.length);
      const page = Buffer.from(bodies.join(''), 'utf8');
      pages.push(page);
      offsets.push(pageOffsets);
      progress.bytes += page.length + pageOffsets.byteLength;
      bodies = [];
      pageOffsets = new Uint32Array(PAGE_SIZE + 1);
      pageBytes = 0;
    };
    for (let after: number | null = 0; after !== null; ) {
      if (this.closed) throw new Error('entry cache closed');
      const { next, visible } = await this.entries.page(after, READ_SIZE);
      after = next;
      for (const entry of visible) {
        // The index compares stored UUIDs byte for byte with the canonical form that requests use.
        if (!CANONICAL_UUID.test(entry.uuid)) throw new Error('an entry has a UUID not in canonical form');
        const encoded = encode(entry);
        let body: string;
        if (typeof encoded === 'string') {
          body = encoded;
          pageOffsets[bodies.length] = pageBytes;
        } else {
          templates.push(encoded);
          templated.push(count);
          progress.bytes += this.options.templateSize(encoded) + 32;
          body = `{"uuid":"${entry.uuid}`;
          pageOffsets[bodies.length] = pageBytes + TEMPLATED;
        }
        bodies.push(body);
        pageBytes += Buffer.byteLength(body);
        if (count === hashes.length) {
          const grown = new Uint32Array(hashes.length * 2);
          grown.set(hashes);
          hashes = grown;
        }
        hashes[count++] = hashUuid(entry.uuid);
        if (bodies.length === PAGE_SIZE) seal();
      }
      if (progress.bytes + pageBytes + 4 * count > budget) return null;
      await yieldToEventLoop();
    }
    if (bodies.length > 0) seal();
    let slots = 2;
    while (slots < count * 2) slots *= 2;
    progress.bytes += 4 * slots + 4 * count + (templates.length > 0 ? 4 * count : 0);
    if (progress.bytes > budget) return null;
    const index = new Int32Array(slots);
    const mask = slots - 1;
    for (let i = 0; i < count; i++) {
      let slot = hashes[i]! & mask;
      while (index[slot] !== 0) slot = (slot + 1) & mask;
      index[slot] = i + 1;
      if (i % INDEX_SLICE === INDEX_SLICE - 1) await yieldToEventLoop();
    }
    // Nothing changed while the pages were read one by one: the snapshot is that revision's.
    if ((await this.entries.readRevision()) !== startRevision) throw new Error('the revision changed during the build');
    const templateOf = new Int32Array(templates.length > 0 ? count : 0);
    for (let t = 0; t < templated.length; t++) templateOf[templated[t]!] = t + 1;
    return new EntrySnapshot(startRevision, count, pages, offsets, templates, templateOf, index, progress.bytes);
  }
}
