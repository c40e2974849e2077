/**
 * The entry service: every public read of one entry (the JSON API and its fast lane, the site's home
 * and share page, the share cards, OData's single entities) and the status go through it, built once
 * at start.
 *
 * - One random: a pick uniform over the visible entries whose cost does not grow with their number.
 *   The visible entries are counted per block of ids by the database itself (storage/entries.ts,
 *   `visibleBlocks`); a pick draws one of them, finds its block by the counts, then draws ids within
 *   the block until one is visible (rejection within a block stays uniform), and after a few misses
 *   takes the drawn entry's place in the block from one read of the block's ids. Nothing reads or
 *   holds every id (docs/decisions.md, "The random pick").
 * - One cache (hot-cache.ts) of prepared JSON within ENTRY_CACHE_BYTES: filled in the background a
 *   page of ids at a time, then keeping the entries asked for by UUID again and again (a clock).
 *   When every visible entry fits it is complete, and random and by-UUID answer from memory alone.
 * - Kept current from the change log (storage/changes.ts): when the revision moves, the changes since
 *   the last one applied are read and applied to the cache (what went is dropped, what came or changed
 *   is read again), so that a hidden entry is never served once the revision that hid it is seen.
 *   A change of the server variables (every prepared body may change), a gap in the log, or more
 *   changes than MAX_APPLIED at once start the cache again, empty, refilled in the background.
 */
import type { EntryRecord } from '../../domain/records.ts';
import { mathRandomPick, type PickIndex, type ServerVariables } from '../../domain/variables.ts';
import { asciiBytesOf, entryJsonEncoder, entryRecordOf, type EntryJson, type EntryJsonTemplate } from '../../formats/entry.ts';
import { watchCache, watchRandomPicks, type RandomPicks } from '../../metrics/registry.ts';
import { ChangeStore, logsChanges } from '../../storage/changes.ts';
import type { DatabaseStatus, StoredEntry, VisibleBlocks } from '../../storage/entries.ts';
import type { Storage } from '../../storage/index.ts';
import { drawFrom, idsToTry, nextId, resolveDraw, type Draw } from './draws.ts';
import { HotCache } from './hot-cache.ts';

export type { Draw } from './draws.ts';

export interface EntryServiceOptions {
  /** The cache's byte budget (ENTRY_CACHE_BYTES); 0 keeps nothing and always asks the database. */
  cacheBytes: number;
}

/** An entry ready to send: its prepared JSON and, when all ASCII, the body's length in bytes. */
export interface ReadyEntry {
  readonly json: EntryJson;
  readonly asciiBytes: number | undefined;
}

/**
 * Resolves random draws away from the event loop (a read worker's own connection), each as a ready
 * entry, or null when its block held fewer than counted.
 */
export type DrawAhead = (draws: readonly Draw[], variables: ServerVariables) => Promise<ReadonlyArray<ReadyEntry | null>>;

/** Rows read and prepared per step of the background fill: about a millisecond each. */
const FILL_PAGE = 256;
/** Changes applied to the cache at once; more and it starts again (an import, a restore). */
const MAX_APPLIED = 1000;
/** Entries read again at once when they came or changed. */
const REREAD_CHUNK = 200;
/** Random entries drawn ahead at once; more are drawn when fewer than this many are left. */
const AHEAD = 512;
/**
 * The first batch drawn at a revision. After every change the requests wait for it (random), so it
 * is small enough to come in about a millisecond on a warm file; each next batch doubles, up to AHEAD.
 */
const FIRST_AHEAD = 32;
/** Batches drawn at once at most (one per read worker, as a rule). */
const AHEAD_BATCHES = 2;
/** Fresh draws when the counts were behind the entries (a change landed between the two reads). */
const ROUNDS = 3;
/** Batches a request waits for before its pick is read on request (more requests waiting than a batch holds). */
const WAITS = 3;

interface View {
  readonly revision: number;
  readonly variables: ServerVariables;
  readonly encode: (entry: EntryRecord) => EntryJson;
  /** The counts per block of this revision, read on the first pick that needs them. */
  blocks: VisibleBlocks | null;
  loading: Promise<VisibleBlocks> | null;
  /** Random entries drawn ahead at this revision, taken from the end. */
  readonly ahead: ReadyEntry[];
  /** Batches being drawn: up to AHEAD_BATCHES at once, so that a slow read (a cold disk) does not leave the requests without. */
  drawingAhead: number;
  /** The size of the next batch: FIRST_AHEAD, doubling up to AHEAD. */
  batch: number;
  /** Requests waiting for the next batch (`random`), woken when one settles. */
  readonly waiting: Array<() => void>;
}

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

export class EntryService {
  private readonly hot: HotCache;
  private readonly changes: ChangeStore;
  private view: View | null = null;
  private syncing: Promise<View> | null = null;
  /** Grows when the cache starts again: a fill of an older generation stops. */
  private generation = 0;
  private filling = false;
  /** The uuids a sync changed while a page of the fill was being read: that page's copy is older. */
  private touched: Set<string> | null = null;
  private closed = false;
  private drawAhead: DrawAhead | undefined;
  /** Random picks served, by where their entry came from (/metrics: nonsense_random_picks_total). */
  private readonly picks: RandomPicks = { cache: 0, drawn_ahead: 0, on_request: 0 };
  private readonly unwatch: () => void;
  private readonly unwatchPicks: () => void;

  constructor(
    private readonly storage: Storage,
    options: EntryServiceOptions,
  ) {
    this.hot = new HotCache(options.cacheBytes, (template) => (template as EntryJsonTemplate).size());
    this.changes = new ChangeStore(storage.database.db);
    this.unwatch = watchCache('entry_snapshot', () => ({ bytes: this.hot.bytes, items: this.hot.size }));
    this.unwatchPicks = watchRandomPicks(() => this.picks);
    // An engine read over a connection (PostgreSQL) reads a batch of draws in one query, not one per request.
    if (!storage.entries.readsNow) this.drawAhead = (draws) => this.readDraws(draws);
  }

  /**
   * drawsAheadWith lets random picks be resolved ahead of the requests by `drawAhead` while the cache
   * does not hold every entry: a request then takes a ready entry drawn at the revision it answers at,
   * and the event loop reads and prepares none. Picks drawn independently and each used once are as
   * uniform as picks drawn per request.
   */
  drawsAheadWith(drawAhead: DrawAhead): void {
    this.drawAhead = drawAhead;
  }

  /**
   * warm brings the service to the current revision and starts filling the cache, without waiting;
   * where picks are drawn ahead, it draws the revision's first batch at once, so that the first random
   * request after a start or a change finds it drawn or under way (the read workers started too).
   */
  warm(): void {
    this.current()
      .then((view) => this.drawFirst(view))
      .catch(() => {});
  }

  // The answers from memory alone, for the fast lane: undefined leaves the request to the routes.

  /** revisionNow is the revision the service answers at, when it is known to be current without waiting. */
  revisionNow(): number | undefined {
    return this.viewNow()?.revision;
  }

  /**
   * randomNow is a random entry from memory; or, when the pick drew an entry the cache does not hold,
   * the draw, which `random` continues (a fresh pick instead would favour the entries held); or
   * undefined when nothing is known yet, or when picks are drawn ahead and none is ready (`random`
   * then waits for the batch being drawn, rather than read on the event loop).
   */
  randomNow(pick: PickIndex): ReadyEntry | Draw | undefined {
    const view = this.viewNow();
    if (view === null) return undefined;
    if (this.hot.complete) {
      if (this.hot.size === 0) return undefined;
      this.picks.cache++;
      return this.hot.at(pick(this.hot.size));
    }
    if (view.blocks === null || view.blocks.total === 0) return undefined;
    if (this.drawAhead !== undefined) {
      const ahead = this.takeAhead(view, this.drawAhead);
      if (ahead !== undefined) this.picks.drawn_ahead++;
      return ahead;
    }
    const draw = drawFrom(view.blocks, pick);
    const held = this.hot.findId(draw.id);
    if (held !== undefined) {
      this.picks.cache++;
      return held;
    }
    if (!this.storage.entries.readsNow) return draw;
    const found = this.inBlockNow(view, draw, pick);
    if ('json' in found) this.picks.on_request++;
    return found;
  }

  /**
   * findNow is the visible entry with this lower-case uuid from memory, or read at once where the
   * engine answers in-process; undefined when it is not found that way (the routes then answer).
   */
  findNow(uuid: string): ReadyEntry | undefined {
    const view = this.viewNow();
    if (view === null) return undefined;
    const cached = this.hot.find(uuid);
    if (cached !== undefined || this.hot.complete) return cached;
    const stored = this.storage.entries.findStoredNow(uuid);
    return stored === null || stored === undefined ? undefined : this.admit(view, stored);
  }

  // The answers that may ask the database.

  /**
   * random is a visible entry picked uniformly, or null when there is none; `drawn` continues a draw
   * of randomNow's. Where picks are drawn ahead, it takes one, waiting for the batch being drawn when
   * none is ready: an entry of a batch is an independent uniform pick, and the wait holds no one else
   * up, where a read on the event loop (a page off a cold disk) would hold every request. A pick is
   * read on request only when the batches do not come (refused by busy workers, failed) or run out
   * before this request's turn.
   */
  async random(pick: PickIndex, drawn?: Draw): Promise<ReadyEntry | null> {
    let view = await this.current();
    for (let wait = 0; drawn === undefined && this.drawAhead !== undefined && !this.hot.complete && wait <= WAITS; wait++) {
      const blocks = await this.blocksOf(view);
      if (blocks.total === 0) return null;
      const ahead = this.takeAhead(view, this.drawAhead);
      if (ahead !== undefined) {
        this.picks.drawn_ahead++;
        return ahead;
      }
      if (view.drawingAhead === 0 || wait === WAITS) break;
      await new Promise<void>((resolve) => view.waiting.push(resolve));
      view = await this.current();
    }
    if (this.hot.complete) {
      if (this.hot.size === 0) return null;
      this.picks.cache++;
      return this.hot.at(pick(this.hot.size));
    }
    const blocks = await this.blocksOf(view);
    for (let round = 0; round < ROUNDS && blocks.total > 0; round++) {
      const found = await this.inBlock(view, drawn ?? drawFrom(blocks, pick), pick);
      if (found !== null) {
        this.picks.on_request++;
        return found;
      }
      drawn = undefined;
    }
    return null;
  }

  /** find is the visible entry with this lower-case uuid and the revision it is of, or null. */
  async find(uuid: string): Promise<{ entry: ReadyEntry; revision: number } | null> {
    const view = await this.current();
    const cached = this.hot.find(uuid);
    if (cached !== undefined) return { entry: cached, revision: view.revision };
    if (this.hot.complete) return null;
    const stored = await this.storage.entries.findStored(uuid);
    if (stored === null) return null;
    return { entry: this.admit(view, stored), revision: view.revision };
  }

  /** randomEntry is a visible entry picked uniformly, as stored, or null. */
  async randomEntry(pick: PickIndex): Promise<EntryRecord | null> {
    const found = await this.random(pick);
    return found === null ? null : entryRecordOf(found.json);
  }

  /** findEntry is the visible entry with this lower-case uuid, as stored, or null. */
  async findEntry(uuid: string): Promise<EntryRecord | null> {
    const found = await this.find(uuid);
    return found === null ? null : entryRecordOf(found.entry.json);
  }

  /** status summarises the visible entries at the current revision. */
  status(): Promise<DatabaseStatus> {
    return this.storage.entries.status();
  }

  /** stats: the cache's bytes and entries, whether it is complete, and the random entries drawn ahead. */
  stats(): { bytes: number; entries: number; complete: boolean; ahead: number } {
    return { bytes: this.hot.bytes, entries: this.hot.size, complete: this.hot.complete, ahead: this.view?.ahead.length ?? 0 };
  }

  /** close lets the cache go and stops the fill. */
  close(): void {
    this.closed = true;
    this.generation++;
    this.hot.clear();
    this.unwatch();
    this.unwatchPicks();
  }

  private viewNow(): View | null {
    const revision = this.storage.cache.peek();
    const view = this.view;
    if (revision !== null && view !== null && view.revision === revision) return view;
    // The revision is due to be read again, or read and not caught up with: both for the next request.
    this.warm();
    return null;
  }

  /** inBlock finds the drawn entry, or another uniformly drawn within its block; null when the block had fewer than counted. */
  private async inBlock(view: View, draw: Draw, pick: PickIndex): Promise<ReadyEntry | null> {
    const tries = idsToTry(draw);
    for (let attempt = 0; attempt < tries; attempt++) {
      const id = nextId(draw, attempt, pick);
      const cached = this.hot.findId(id);
      if (cached !== undefined) return cached;
      const stored = await this.storage.entries.findById(id);
      // A random pick is no sign of heat: it is not kept.
      if (stored !== null) return ready(view.encode(stored));
    }
    const stored = await this.storage.entries.nthInBlock(draw.block, draw.nth);
    return stored === null ? null : ready(view.encode(stored));
  }

  /** inBlockNow is inBlock read at once; the draw itself when a read cannot be made now, for `random` to continue. */
  private inBlockNow(view: View, draw: Draw, pick: PickIndex): ReadyEntry | Draw {
    const entries = this.storage.entries;
    const prepared = (stored: StoredEntry | null | undefined) => (stored === undefined || stored === null ? stored : ready(view.encode(stored)));
    const found = resolveDraw(draw, pick, {
      findById: (id) => this.hot.findId(id) ?? prepared(entries.findByIdNow(id)),
      nthInBlock: (block, n) => prepared(entries.nthInBlockNow(block, n)),
    });
    // Not read now, or fewer than counted (a change between the counts and now): the routes go on.
    return found ?? draw;
  }

  /**
   * takeAhead is a random entry drawn ahead at the view's revision, when there is one; it draws more
   * while fewer than AHEAD are left beyond those of the batches being drawn (AHEAD_BATCHES at most).
   * Those of an older revision are never served: the view holds its own.
   */
  private takeAhead(view: View, drawAhead: DrawAhead): ReadyEntry | undefined {
    const entry = view.ahead.pop();
    if (view.ahead.length < AHEAD * view.drawingAhead + AHEAD && view.drawingAhead < AHEAD_BATCHES && view.blocks !== null) this.drawMore(view, view.blocks, drawAhead);
    return entry;
  }

  /** readDraws resolves draws with one read of their ids, and the few whose id is not visible one by one. */
  private async readDraws(draws: readonly Draw[]): Promise<Array<ReadyEntry | null>> {
    const view = await this.current();
    const found = await this.storage.entries.findByIds(draws.map((draw) => draw.id));
    const entries: Array<ReadyEntry | null> = [];
    for (const draw of draws) {
      const stored = found.get(draw.id);
      entries.push(stored === undefined ? await this.inBlock(view, draw, mathRandomPick) : ready(view.encode(stored)));
    }
    return entries;
  }

  /** mayAllFit tells whether every visible entry may fit the budget, judged by the first page's entries. */
  private async mayAllFit(page: readonly { bytes: number }[]): Promise<boolean> {
    if (page.length === 0) return true;
    const { count } = await this.storage.entries.status();
    const mean = page.reduce((sum, entry) => sum + entry.bytes, 0) / page.length;
    return count * mean <= this.hot.budget;
  }

  /**
   * drawFirst draws a view's first batch ahead, unless the cache holds every entry or may yet (a fill
   * under way: it ends by drawing, when the entries turn out not to fit), or a batch is drawn or under way.
   */
  private async drawFirst(view: View): Promise<void> {
    const unneeded = () => this.drawAhead === undefined || this.hot.complete || this.filling || view.ahead.length > 0 || view.drawingAhead > 0 || this.view !== view;
    if (unneeded()) return;
    const blocks = await this.blocksOf(view);
    if (!unneeded() && blocks.total > 0) this.drawMore(view, blocks, this.drawAhead!);
  }

  private drawMore(view: View, blocks: VisibleBlocks, drawAhead: DrawAhead): void {
    view.drawingAhead++;
    const draws = Array.from({ length: view.batch }, () => drawFrom(blocks, mathRandomPick));
    view.batch = Math.min(AHEAD, view.batch * 2);
    drawAhead(draws, view.variables)
      .then((entries) => {
        for (const entry of entries) if (entry !== null) view.ahead.push(entry);
      })
      // Busy workers or a failed read: the requests waiting make their picks themselves, and the next draws ahead again.
      .catch(() => {})
      .finally(() => {
        view.drawingAhead--;
        for (const wake of view.waiting.splice(0)) wake();
      });
  }

  /** admit keeps an entry read by UUID, unless a change came in while it was read. */
  private admit(view: View, stored: StoredEntry): ReadyEntry {
    const json = view.encode(stored);
    const entry = this.hot.weigh(stored.id, stored.uuid, json);
    if (entry === null) return ready(json);
    entry.used = true;
    if (this.view === view && !this.closed) this.hot.put(entry);
    return entry;
  }

  private blocksOf(view: View): Promise<VisibleBlocks> {
    if (view.blocks !== null) return Promise.resolve(view.blocks);
    view.loading ??= this.storage.entries.visibleBlocks().then(
      (blocks) => (view.blocks = blocks),
      (error: unknown) => {
        view.loading = null;
        throw error;
      },
    );
    return view.loading;
  }

  /** current is the view of the current revision, once the cache has caught up with it. */
  private async current(): Promise<View> {
    const revision = await this.storage.cache.current();
    const view = this.view;
    if (view !== null && view.revision === revision) return view;
    this.syncing ??= this.sync().finally(() => (this.syncing = null));
    return this.syncing;
  }

  private async sync(): Promise<View> {
    for (;;) {
      const revision = await this.storage.cache.current();
      const view = this.view;
      if (view !== null && view.revision === revision) return view;
      const variables = await this.storage.variables.values();
      const encode = entryJsonEncoder(variables);
      const applied = view !== null && revision > view.revision && (await this.apply(view.revision, encode));
      if (!applied) this.restart();
      // A fresh object: a read begun under the old view does not fill the cache (admit).
      this.view = { revision, variables, encode, blocks: null, loading: null, ahead: [], drawingAhead: 0, batch: FIRST_AHEAD, waiting: [] };
      if (!applied) void this.fill(this.generation);
    }
  }

  /** apply brings the cache from revision `from` by the change log; false when it cannot. */
  private async apply(from: number, encode: (entry: EntryRecord) => EntryJson): Promise<boolean> {
    if (!logsChanges(this.storage.database.db) || (await this.changes.floor()) > from) return false;
    const changes = await this.changes.after(from, MAX_APPLIED + 1);
    if (changes.length > MAX_APPLIED || changes.some((change) => change.type.startsWith('variable.'))) return false;
    const again = new Set<string>();
    for (const change of changes) {
      if (!change.type.startsWith('entry.')) continue;
      this.hot.remove(change.key);
      this.touched?.add(change.key);
      if (change.type === 'entry.hidden' || change.type === 'entry.deleted') again.delete(change.key);
      else again.add(change.key);
    }
    // A complete cache (or one being filled) stays so only with what came; else they come back when asked for.
    if (!this.hot.complete && !this.filling) return true;
    const uuids = [...again];
    for (let i = 0; i < uuids.length; i += REREAD_CHUNK) {
      for (const stored of await this.storage.entries.findStoredMany(uuids.slice(i, i + REREAD_CHUNK))) {
        const entry = this.hot.weigh(stored.id, stored.uuid, encode(stored));
        if (entry === null) this.hot.complete = false;
        else this.hot.put(entry);
      }
    }
    return true;
  }

  /** restart lets the cache go: the next fill starts from the first id. */
  private restart(): void {
    this.generation++;
    this.hot.clear();
    this.filling = false;
  }

  /**
   * fill reads the visible entries a page of ids at a time, yielding between pages, until every entry
   * is held (then it is complete), or the budget is full (the cache then keeps what is asked for).
   * When the first page shows that the entries cannot all fit, it fills nothing: the entries with the
   * first ids are no likelier to be asked for than any other, and reading them would cost the start
   * its time and the process the whole budget in memory for nothing. The cache then holds only the
   * entries asked for by UUID, and random picks are drawn ahead (drawsAheadWith).
   */
  private async fill(generation: number): Promise<void> {
    if (this.hot.budget === 0) return;
    this.filling = true;
    const current = () => generation === this.generation && !this.closed;
    try {
      for (let after = 0; ; ) {
        await yieldToEventLoop();
        if (!current()) return;
        const touched = (this.touched = new Set());
        const { next, visible } = await this.storage.entries.page(after, FILL_PAGE);
        // A newer fill may have begun meanwhile: its set stays.
        if (this.touched === touched) this.touched = null;
        const view = this.view;
        if (!current() || view === null) return;
        const page = [];
        for (const stored of visible) {
          if (touched.has(stored.uuid) || this.hot.findId(stored.id) !== undefined) continue;
          const entry = this.hot.weigh(stored.id, stored.uuid, view.encode(stored));
          if (entry === null) return;
          page.push(entry);
        }
        if (after === 0 && next !== null && !(await this.mayAllFit(page))) return;
        for (const entry of page) {
          if (!this.hot.fits(entry.bytes)) return;
          this.hot.put(entry);
        }
        if (next === null) {
          this.hot.complete = true;
          return;
        }
        after = next;
      }
    } catch {
      // The database failed: the cache holds what it has, and the next restart fills it again.
    } finally {
      if (generation === this.generation) {
        this.filling = false;
        if (this.view !== null) this.drawFirst(this.view).catch(() => {});
      }
    }
  }
}

/** ready is a prepared entry with its length in bytes when all ASCII. */
function ready(json: EntryJson): ReadyEntry {
  return { json, asciiBytes: asciiBytesOf(json) };
}
