/**
 * What the galaxy endpoint serves, kept in memory so that a request costs no database walk:
 *
 * - A *snapshot* of the stored layout: every star of one layout version, each already rendered as a
 *   CSV record and as a JSON object, packed into one buffer per format. It is read in pages in the
 *   background when the layout changes; until then requests get the previous snapshot, the last
 *   layout this process read (a second or two old at most). Only the very first request of a process
 *   waits for one.
 * - Which stars are shown is decided per request from the entries' revision: when entries changed
 *   since the snapshot was read, the ids of the visible entries are read again (one indexed column),
 *   so hidden and deleted entries leave the galaxy at once, as everywhere else. A body is then the
 *   runs of shown stars copied out of the snapshot's buffer: a few milliseconds for 100,000 stars.
 *
 * A snapshot holds about 200 bytes a star (its two records and its id), within a byte budget
 * (GALAXY_CACHE_BYTES): a galaxy that would not fit is not held in memory, and every request then
 * walks the database page by page.
 */
import { csvRecord, GALAXY_BODY_SHAPE, GALAXY_CSV_HEADER, galaxyChunks, jsonItem, renderPages, type GalaxyFormat } from '../../formats/galaxy.ts';
import type { GalaxyLayout, GalaxyStore } from '../../storage/galaxy.ts';

/**
 * What a star is expected to take in a snapshot, to decide before reading whether a galaxy fits the
 * budget: its CSV record (about 80 bytes), its JSON object (about 110), its id and visibility (9).
 * The snapshot's real size decides after reading.
 */
const EXPECTED_BYTES_A_STAR = 200;

/** One format's records, back to back, and where each starts (`offsets[i]` to `offsets[i + 1]`). */
interface Records {
  bytes: Buffer;
  offsets: Float64Array;
}

interface Snapshot {
  fit: number;
  version: number;
  /** The entries revision the layout reflected when read. */
  layoutRevision: number;
  /** What it holds, in bytes. */
  bytes: number;
  /** The entries revision when it was read, and which stars were visible then. */
  readAt: number;
  visibleAtRead: Uint8Array;
  ids: Float64Array;
  /** JSON objects are each followed by a comma; the body's last one becomes the closing bracket. */
  records: Record<GalaxyFormat, Records>;
}

/** What a request is answered with: what identifies it (for its ETag), and its body in a format. */
export interface GalaxyView {
  tag: string;
  body(format: GalaxyFormat): Promise<Buffer> | AsyncIterable<string>;
}

export class GalaxyBodies {
  private snapshot: Snapshot | null = null;
  private loading: { key: string; promise: Promise<Snapshot | null> } | null = null;
  private visible: { revision: number; ids: Promise<Set<number>> } | null = null;
  /** The runs of shown stars (start, end pairs) of the current snapshot at a revision. */
  private runs: { key: string; runs: Promise<Float64Array> } | null = null;
  /**
   * The last body assembled per format, for the runs it was assembled from. Requests in flight at the
   * same time share it, where each used to copy its own: a body is megabytes (80 bytes a star in CSV),
   * and eight clients asking at once grew the process by 84 MiB of freed copies that the allocator
   * kept (docs/performance.md, "Memory under abuse"). Held weakly: an idle process lets it go.
   */
  private readonly lastBodies = new Map<GalaxyFormat, { runs: Float64Array; body: WeakRef<Buffer> }>();
  /** The layout (fit/version) whose snapshot came out larger than the budget: it is streamed. */
  private overBudget: string | null = null;

  constructor(
    private readonly store: GalaxyStore,
    private readonly revision: () => Promise<number>,
    /** Byte budget of the snapshot; 0 never holds one. */
    private readonly budget: number,
  ) {}

  /** bytes is what the snapshot in use holds (0 when there is none). */
  get bytes(): number {
    return this.snapshot?.bytes ?? 0;
  }

  /** stars is the number of stars of the snapshot in use. */
  get stars(): number {
    return this.snapshot?.ids.length ?? 0;
  }

  /** view returns what to serve for `layout` now; it waits only when this process has no snapshot yet. */
  async view(layout: GalaxyLayout): Promise<GalaxyView> {
    const revision = await this.revision();
    const key = `${layout.fit}/${layout.version}`;
    if ((layout.fitted_count + layout.placed_since_fit) * EXPECTED_BYTES_A_STAR > this.budget || this.overBudget === key) {
      this.snapshot = null;
      this.runs = null;
      return {
        tag: `galaxy-${layout.revision}.${layout.version}-r${revision}-s${GALAXY_BODY_SHAPE}`,
        body: (format) => galaxyChunks(format, renderPages(format, this.store.points(layout.fit))),
      };
    }
    const current = this.snapshot;
    if (current === null || `${current.fit}/${current.version}` !== key) {
      const next = this.load(layout, key);
      if (current === null && (await next) === null) return this.view(layout);
    }
    const snapshot = this.snapshot!;
    return {
      tag: `galaxy-${snapshot.layoutRevision}.${snapshot.version}-r${revision}-s${GALAXY_BODY_SHAPE}`,
      body: (format) => this.body(snapshot, revision, format),
    };
  }

  /**
   * load reads a snapshot of `layout` (once, however many requests ask) and makes it current; null
   * when it turned out larger than the budget, which then holds no snapshot for this layout.
   */
  private load(layout: GalaxyLayout, key: string): Promise<Snapshot | null> {
    if (this.loading?.key === key) return this.loading.promise;
    const promise = (async () => {
      const readAt = await this.revision();
      const ids: number[] = [];
      const visibleAtRead: number[] = [];
      const csv = new RecordsBuilder();
      const json = new RecordsBuilder();
      for await (const page of this.store.allPoints(layout.fit)) {
        for (const star of page) {
          ids.push(star.entryId);
          visibleAtRead.push(star.visible ? 1 : 0);
          csv.add(csvRecord(star));
          json.add(`${jsonItem(star)},`);
        }
        csv.endPage();
        json.endPage();
      }
      const records = { csv: csv.build(), json: json.build() };
      const bytes = ids.length * 9 + records.csv.bytes.length + records.json.bytes.length + 16 * (ids.length + 1);
      if (bytes > this.budget) {
        this.overBudget = key;
        this.snapshot = null;
        this.runs = null;
        return null;
      }
      const snapshot: Snapshot = {
        fit: layout.fit,
        version: layout.version,
        layoutRevision: layout.revision,
        bytes,
        readAt,
        visibleAtRead: Uint8Array.from(visibleAtRead),
        ids: Float64Array.from(ids),
        records,
      };
      // A newer layout may have been read meanwhile; never go back to an older one.
      if (this.snapshot === null || this.snapshot.fit !== snapshot.fit || this.snapshot.version < snapshot.version) {
        this.snapshot = snapshot;
        this.runs = null;
      }
      return snapshot;
    })();
    this.loading = { key, promise };
    const done = () => {
      if (this.loading?.promise === promise) this.loading = null;
    };
    promise.then(done, done);
    return promise;
  }

  /** visibleIds reads the ids of the visible entries at `revision`, once per revision. */
  private visibleIds(revision: number): Promise<Set<number>> {
    if (this.visible?.revision !== revision) {
      const ids = this.store.visibleIds().then((list) => new Set(list));
      this.visible = { revision, ids };
      ids.catch(() => {
        if (this.visible?.ids === ids) this.visible = null;
      });
    }
    return this.visible.ids;
  }

  /** shownRuns finds the runs of stars to show: visible as read with the snapshot, or at `revision`. */
  private shownRuns(snapshot: Snapshot, revision: number): Promise<Float64Array> {
    const key = `${snapshot.fit}/${snapshot.version}/${revision}`;
    if (this.runs?.key !== key || this.snapshot !== snapshot) {
      const runs = (async () => {
        const visible = revision === snapshot.readAt ? null : await this.visibleIds(revision);
        const out: number[] = [];
        let start = -1;
        for (let i = 0; i <= snapshot.ids.length; i++) {
          const shown = i < snapshot.ids.length && (visible === null ? snapshot.visibleAtRead[i] === 1 : visible.has(snapshot.ids[i]!));
          if (shown && start === -1) start = i;
          if (!shown && start !== -1) {
            out.push(start, i);
            start = -1;
          }
        }
        return Float64Array.from(out);
      })();
      if (this.snapshot === snapshot) this.runs = { key, runs };
      runs.catch(() => {
        if (this.runs?.runs === runs) this.runs = null;
      });
      return runs;
    }
    return this.runs.runs;
  }

  private async body(snapshot: Snapshot, revision: number, format: GalaxyFormat): Promise<Buffer> {
    const runs = await this.shownRuns(snapshot, revision);
    const last = this.lastBodies.get(format);
    const shared = last?.runs === runs ? last.body.deref() : undefined;
    if (shared !== undefined) return shared;
    const body = this.assemble(snapshot, runs, format);
    this.lastBodies.set(format, { runs, body: new WeakRef(body) });
    return body;
  }

  /** assemble copies the shown runs of one format's records into a body. */
  private assemble(snapshot: Snapshot, runs: Float64Array, format: GalaxyFormat): Buffer {
    const { bytes, offsets } = snapshot.records[format];
    const parts: Buffer[] = [format === 'csv' ? Buffer.from(GALAXY_CSV_HEADER) : Buffer.from('[')];
    for (let r = 0; r < runs.length; r += 2) parts.push(bytes.subarray(offsets[runs[r]!], offsets[runs[r + 1]!]));
    if (format === 'csv') return Buffer.concat(parts);
    if (parts.length === 1) return Buffer.from('[]');
    const body = Buffer.concat(parts);
    body[body.length - 1] = 0x5d; // the last object's comma becomes `]`
    return body;
  }
}

/** RecordsBuilder packs records (ASCII strings) into one buffer, a page at a time. */
class RecordsBuilder {
  private readonly pages: Buffer[] = [];
  private readonly offsets: number[] = [0];
  private page: string[] = [];
  private length = 0;

  add(record: string): void {
    this.page.push(record);
    this.length += record.length;
    this.offsets.push(this.length);
  }

  endPage(): void {
    this.pages.push(Buffer.from(this.page.join(''), 'latin1'));
    this.page = [];
  }

  build(): Records {
    this.endPage();
    return { bytes: Buffer.concat(this.pages), offsets: Float64Array.from(this.offsets) };
  }
}
