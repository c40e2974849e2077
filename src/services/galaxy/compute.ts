/**
 * Keeping the stored galaxy up to date, one round at a time: the background worker thread runs a
 * round every few seconds, `nonsense galaxy` runs one. A round
 *
 * - fits the layout anew (a *refit*) when there is none yet, when it was made by another version of
 *   the algorithm, or when the galaxy changed enough since the last fit: entries placed by transform
 *   since then reach REFIT_FRACTION of the entries fitted, or the visible entries fell below
 *   (1 - REFIT_FRACTION) of them;
 * - otherwise places every entry the layout does not show as it is (new, edited, or left from a
 *   previous fit) with UMAP's transform, PLACE_BATCH at a time, into the current fit.
 *
 * A refit lays out at most FIT_SAMPLE entries (the ones whose uuid hashes lowest, so the sample is
 * stable) with UMAP, then transforms every other entry into that layout, writes it all under a new fit
 * number and switches to it. While a long refit runs, entries added meanwhile are still placed into
 * the current layout every few seconds; after the switch they are placed again into the new one.
 *
 * Of several processes sharing a PostgreSQL database one computes at a time (an advisory lock); the
 * others skip their round. All of them serve whatever layout is stored.
 */
import type { Database } from '../../db/database.ts';
import { GalaxyStore, type EntryToPlace, type GalaxyLayout, type PlacedPoint } from '../../storage/galaxy.ts';
import { answerStale, writeAnswer } from './answer.ts';
import { FIT_SAMPLE, LayoutModel, pointSize, yieldToEvents, type Pause } from './layout.ts';
import { MODEL_VERSION } from './model-version.ts';
import { Lanes, RefitPlacers } from './placing.ts';
import { sampleIds } from './sample.ts';

/** The advisory lock the computation holds (an arbitrary number, the same in every process). */
export const GALAXY_LOCK = 0x6a1a_c5e7;
/** Share of change since the last fit that triggers a refit. */
export const REFIT_FRACTION = 0.25;
/** Entries placed by transform at once (then stored, then the next batch). */
export const PLACE_BATCH = 2000;
/** The layout's seed: the same entries give the same layout. */
export const LAYOUT_SEED = 20_240_517;
/** While a refit runs, entries added meanwhile are placed at most this often. */
const PLACE_DURING_REFIT_MS = 2000;

export type RoundResult =
  | { action: 'busy' }
  | { action: 'none'; fit: number | null }
  | { action: 'placed'; fit: number; placed: number }
  | { action: 'answered'; fit: number; stars: number }
  | { action: 'fitted'; fit: number; points: number; sample: number; placed: number; superseded: boolean };

export interface ComputeOptions {
  /** Progress and decisions, for logs. */
  log?: (message: string, details?: Record<string, unknown>) => void;
  now?: () => number;
  /** Ends a round early (at its next pause, with the signal's reason): the background thread's shutdown. */
  signal?: AbortSignal;
  /** Threads a refit places entries on: this one and `threads - 1` helper threads (default 1). */
  threads?: number;
  /** Entries a refit fits at most (default FIT_SAMPLE) and reads per page to place (default PLACE_BATCH): smaller in tests. */
  fitSample?: number;
  pageRows?: number;
}

const round4 = (value: number) => Math.round(value * 10_000) / 10_000;

function toPoints(entries: readonly EntryToPlace[], coordinates: Float32Array): PlacedPoint[] {
  return entries.map((entry, i) => ({
    entryId: entry.id,
    entryUpdatedAt: entry.updatedAt,
    x: round4(coordinates[i * 3]!),
    y: round4(coordinates[i * 3 + 1]!),
    z: round4(coordinates[i * 3 + 2]!),
    pointSize: pointSize(entry.text),
  }));
}

/** needsRefit applies the refit rule of the module comment, counting the entries about to be placed as placed. */
export function needsRefit(layout: GalaxyLayout, visible: number, pending: number): boolean {
  if (layout.model_version !== MODEL_VERSION) return true;
  const fitted = layout.fitted_count;
  return layout.placed_since_fit + pending >= Math.max(1, REFIT_FRACTION * fitted) || visible < (1 - REFIT_FRACTION) * fitted;
}

/**
 * GalaxyComputer runs rounds against one database. It keeps the model of the current fit in memory
 * between rounds (a process that did not make it reads it from the database once).
 */
export class GalaxyComputer {
  private model: { fit: number; model: LayoutModel } | null = null;
  private readonly log: NonNullable<ComputeOptions['log']>;
  private readonly now: () => number;
  private readonly threads: number;
  private readonly fitSample: number;
  private readonly pageRows: number;
  /** Gives way to other work between steps, and ends the round when the signal says so. */
  private readonly pause: Pause;

  constructor(
    private readonly database: Database,
    options: ComputeOptions = {},
  ) {
    this.log = options.log ?? (() => {});
    this.now = options.now ?? Date.now;
    this.threads = Math.max(1, options.threads ?? 1);
    this.fitSample = options.fitSample ?? FIT_SAMPLE;
    this.pageRows = options.pageRows ?? PLACE_BATCH;
    const { signal } = options;
    this.pause = async () => {
      await yieldToEvents();
      signal?.throwIfAborted();
    };
  }

  /**
   * warm reads the current layout's model now, so that the first entries added after a start are
   * placed without waiting for it (the background thread calls it once, before its first round).
   */
  async warm(): Promise<void> {
    const store = new GalaxyStore(this.database.db);
    const layout = await store.layout();
    if (layout !== null) await this.modelOf(store, layout);
  }

  /** run does one round (a refit when `refit` is set), or nothing when another process holds the lock. */
  async run({ refit = false } = {}): Promise<RoundResult> {
    const result = await this.database.quirks.tryExclusive(this.database.db, GALAXY_LOCK, (db) => this.round(new GalaxyStore(db), refit));
    return result ?? { action: 'busy' };
  }

  private async round(store: GalaxyStore, forceRefit: boolean): Promise<RoundResult> {
    const revision = await store.revision();
    const layout = await store.layout();
    // The common case, every few seconds: nothing changed since the layout was brought up to date.
    if (!forceRefit && layout !== null && layout.revision === revision && layout.model_version === MODEL_VERSION) return this.answer(store, revision, { action: 'none', fit: layout.fit });
    if (forceRefit || layout === null || layout.model_version !== MODEL_VERSION) return this.refit(store, revision, layout);
    const pending = (await store.pending(layout.fit, PLACE_BATCH)).length;
    if (needsRefit(layout, await store.countVisible(), pending)) return this.refit(store, revision, layout);
    if (pending === 0) return this.answer(store, revision, await this.settle(store, layout, revision));
    const model = await this.modelOf(store, layout);
    if (model === null || !model.canPlace) return this.refit(store, revision, layout);
    const placed = await this.placePending(store, layout.fit, model, revision, this.pause);
    if (placed === null) return { action: 'none', fit: layout.fit };
    if (placed === 0) return this.answer(store, revision, await this.settle(store, layout, revision));
    return this.answer(store, revision, { action: 'placed', fit: layout.fit, placed });
  }

  /**
   * answer writes the stored answer of the current layout when there is none or it is stale
   * (answer.ts); otherwise the round's result stands. It reflects the revision the layout reflects.
   */
  private async answer(store: GalaxyStore, revision: number, result: RoundResult): Promise<RoundResult> {
    const layout = await store.layout();
    if (layout === null || !(await answerStale(store, layout, revision))) return result;
    const started = this.now();
    const answer = await writeAnswer(store, layout.fit, layout.revision, started, this.pause);
    this.log('galaxy answer stored', { fit: layout.fit, stars: answer.stars, chunks: answer.chunks, ms: this.now() - started });
    return result.action === 'none' ? { action: 'answered', fit: layout.fit, stars: answer.stars } : result;
  }

  /** settle records that a layout with nothing to place reflects the current revision. */
  private async settle(store: GalaxyStore, layout: GalaxyLayout, revision: number): Promise<RoundResult> {
    if (layout.revision !== revision) await store.markRevision(layout.fit, revision, this.now());
    return { action: 'none', fit: layout.fit };
  }

  /** modelOf returns the model of the current fit, reading it from the database when this process lacks it. */
  private async modelOf(store: GalaxyStore, layout: GalaxyLayout): Promise<LayoutModel | null> {
    if (this.model?.fit === layout.fit) return this.model.model;
    if (layout.model_version !== MODEL_VERSION) return null;
    const stored = await store.model();
    if (stored === null || stored.fit !== layout.fit) return null;
    const started = this.now();
    let model: LayoutModel;
    try {
      model = LayoutModel.restore(stored.model);
    } catch (error) {
      // A model that cannot be read is no reason to stop: the layout is fitted anew instead.
      this.log('galaxy model unreadable; fitting anew', { fit: stored.fit, error: (error as Error).message });
      return null;
    }
    this.model = { fit: stored.fit, model };
    this.log('galaxy model loaded', { fit: stored.fit, sample: model.sampleSize, ms: this.now() - started });
    return model;
  }

  /**
   * placePending places every pending entry into `fit`, PLACE_BATCH at a time. It returns how many
   * it placed, or null when `fit` stopped being current (another process refitted).
   */
  private async placePending(store: GalaxyStore, fit: number, model: LayoutModel, revision: number, pause: Pause): Promise<number | null> {
    let placed = 0;
    for (;;) {
      const pending = await store.pending(fit, PLACE_BATCH);
      if (pending.length === 0) return placed;
      const coordinates = await model.place(
        pending.map((entry) => entry.text),
        pause,
      );
      // The layout reflects `revision` once the last batch is stored.
      const last = pending.length < PLACE_BATCH;
      if (!(await store.savePlacement(fit, toPoints(pending, coordinates), last ? revision : null, this.now()))) return null;
      placed += pending.length;
      if (last) {
        this.log('galaxy entries placed', { fit, placed });
        return placed;
      }
    }
  }

  /** refit lays out every visible entry anew (see the module comment). */
  private async refit(store: GalaxyStore, revision: number, previous: GalaxyLayout | null): Promise<RoundResult> {
    const started = this.now();
    const fit = started * 1000 + Math.floor(Math.random() * 1000);
    const reason = previous === null ? 'first layout' : previous.model_version !== MODEL_VERSION ? 'new algorithm' : 'changes since the last fit';
    this.log('galaxy refit started', { fit, reason });

    // While this runs, entries added meanwhile still go into the current layout now and then.
    const current = previous === null ? null : { fit: previous.fit, model: await this.modelOf(store, previous) };
    let lastPlaced = this.now();
    const pause: Pause = async () => {
      await this.pause();
      if (current?.model?.canPlace !== true || this.now() - lastPlaced < PLACE_DURING_REFIT_MS) return;
      lastPlaced = this.now();
      const placed = await this.placePending(store, current.fit, current.model, revision, this.pause);
      if (placed === null) current.model = null;
    };

    // The sample: the entries whose uuid hashes lowest, chosen holding only the sample's keys.
    const sampled = await sampleIds(store.visibleKeys(), this.fitSample);
    const inSample = new Set(sampled);
    const sample = await store.entriesByIds(sampled);
    const { model, points } = await LayoutModel.fit(
      sample.map((entry) => entry.text),
      LAYOUT_SEED,
      pause,
    );
    await store.writeFitPoints(fit, toPoints(sample, points));
    this.log('galaxy sample fitted', { fit, sample: sample.length, ms: this.now() - started });

    // Every other visible entry, placed into the sample's layout a page at a time, on as many
    // threads as the computation is given (placing.ts); each page is written as soon as it is placed.
    const modelBytes = model.toBytes();
    let count = sample.length;
    let transformed = 0;
    const placers = RefitPlacers.create(fit, model, modelBytes, this.threads, pause);
    const lanes = new Lanes(placers.placers);
    try {
      for await (const page of store.visibleEntries(this.pageRows)) {
        const rest = page.filter((entry) => !inSample.has(entry.id));
        if (rest.length === 0) continue;
        await lanes.run(async (place) => {
          const coordinates = await place(rest.map((entry) => entry.text));
          await store.writeFitPoints(fit, toPoints(rest, coordinates));
          count += rest.length;
          transformed += rest.length;
          if (transformed % 20_000 < rest.length) this.log('galaxy refit progress', { fit, transformed, ms: this.now() - started });
        });
      }
      await lanes.drain();
    } finally {
      // A failed or stopped refit still waits for the batches under way before the helpers stop.
      await lanes.drain().catch(() => {});
      await placers.close();
    }

    // The endpoint's answer for the new fit, stored before the switch so that it is served at once.
    const answer = await writeAnswer(store, fit, revision, this.now(), pause);
    this.log('galaxy answer stored', { fit, stars: answer.stars, chunks: answer.chunks, ms: this.now() - started });

    const activated = await store.activateFit(fit, previous?.fit ?? null, {
      revision,
      fittedCount: count,
      modelVersion: MODEL_VERSION,
      model: modelBytes,
      now: this.now(),
    });
    if (!activated) {
      // Another process switched to its own new fit meanwhile: keep that one.
      await store.dropAnswer(answer.id);
      await store.deleteOtherFits((await store.layout())!.fit);
      this.log('galaxy refit superseded by another process', { fit });
      return { action: 'fitted', fit, points: count, sample: sample.length, placed: 0, superseded: true };
    }
    this.model = { fit, model };
    await store.deleteOtherFits(fit);
    // Entries added or changed while this ran.
    const placed = (await this.placePending(store, fit, model, await store.revision(), this.pause)) ?? 0;
    this.log('galaxy refit done', { fit, points: count, sample: sample.length, placedAfter: placed, ms: this.now() - started });
    return { action: 'fitted', fit, points: count, sample: sample.length, placed, superseded: false };
  }
}
