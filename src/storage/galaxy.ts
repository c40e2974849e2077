/**
 * The galaxy's storage: the current layout (one row: which fit, its version, the entries revision it
 * reflects, the model that places new entries), its points (one per entry and fit), and the
 * endpoint's stored answers (services/galaxy/answer.ts), in chunks.
 *
 * Readers (the endpoint) see only points of the current fit whose entry is visible, so hidden and
 * deleted entries leave the galaxy at once. The computation (services/galaxy/) writes a new fit's
 * points under a new fit number while the old one is still served, switches the layout row to it in
 * one short transaction, then deletes the old points: readers never see a half-written layout.
 */
import { setImmediate as giveWay } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import type { DB, GalaxyLayoutTable } from '../db/schema.ts';
import { readRevision } from './revision.ts';

/** The current layout, without its model. */
export type GalaxyLayout = Omit<GalaxyLayoutTable, 'id' | 'model'>;

import type { GalaxyPoint } from '../domain/records.ts';

export type { GalaxyPoint };

/** An entry to lay out: its key, text and the `updated_at` it had when read. */
export interface EntryToPlace {
  id: number;
  text: string;
  updatedAt: number;
}

/** A computed star, to store. */
export interface PlacedPoint {
  entryId: number;
  entryUpdatedAt: number;
  x: number;
  y: number;
  z: number;
  pointSize: number;
}

/** A stored answer of the endpoint (services/galaxy/answer.ts). */
export interface GalaxyAnswer {
  id: number;
  fit: number;
  /** The entries revision it reflects: entries changed after it are looked up when it is served. */
  revision: number;
  stars: number;
  chunks: number;
}

/** Where a chunk of a stored answer starts and ends, in uuid order. */
export interface AnswerChunkRange {
  seq: number;
  firstUuid: string;
  lastUuid: string;
}

/** An entry as it is now, for the changes since a stored answer: its star when it has one in the fit. */
export interface EntryNow {
  uuid: string;
  visible: boolean;
  /** Null when the entry has no point in the fit. */
  point: GalaxyPoint | null;
  /** Whether the point was placed for the entry as it is now (false: it is to be placed again). */
  current: boolean;
}

/** Rows per statement when writing points (7 parameters each: far below either engine's limit). */
const WRITE_ROWS = 500;
/** Rows per transaction when writing a fit's points: each holds SQLite's write lock only briefly. */
const WRITE_TRANSACTION_ROWS = 10_000;
/** Rows per page when serving: a few milliseconds of the event loop each. */
export const SERVE_PAGE_ROWS = 2000;
/** Rows per page of the walk in uuid order, which looks up each point by its entry: a few milliseconds each. */
const UUID_PAGE_ROWS = 1000;
/** How long a read of the layout row is reused by the endpoint: other processes' layouts show within it. */
const LAYOUT_MAX_AGE_MS = 1000;

const LAYOUT_COLUMNS = ['fit', 'version', 'revision', 'fitted_count', 'placed_since_fit', 'model_version', 'fitted_at', 'updated_at'] as const;

function toLayout(row: Record<(typeof LAYOUT_COLUMNS)[number], number | string>): GalaxyLayout {
  return Object.fromEntries(LAYOUT_COLUMNS.map((column) => [column, Number(row[column])])) as GalaxyLayout;
}

export class GalaxyStore {
  private cached: { at: number; layout: Promise<GalaxyLayout | null> } | null = null;

  constructor(private readonly db: Kysely<DB>) {}

  /** layout reads the current layout (without its model), or null before the first one. */
  async layout(): Promise<GalaxyLayout | null> {
    const row = await this.db.selectFrom('galaxy_layout').select(LAYOUT_COLUMNS).where('id', '=', 1).executeTakeFirst();
    return row ? toLayout(row) : null;
  }

  /**
   * current is `layout()` read at most once a second, for the endpoint. "No layout yet" is not kept:
   * the first layout is served as soon as it is stored.
   */
  current(now = Date.now()): Promise<GalaxyLayout | null> {
    if (this.cached === null || now - this.cached.at >= LAYOUT_MAX_AGE_MS) {
      const layout = this.layout();
      this.cached = { at: now, layout };
      const forget = () => {
        if (this.cached?.layout === layout) this.cached = null;
      };
      layout.then((read) => read === null && forget(), forget);
    }
    return this.cached.layout;
  }

  /**
   * points walks the served stars of `fit` (visible entries only) in pages, in entry order, giving
   * way to other work between pages.
   */
  async *points(fit: number, pageRows = SERVE_PAGE_ROWS): AsyncGenerator<GalaxyPoint[]> {
    let after = -1;
    for (;;) {
      const rows = await this.db
        .selectFrom('galaxy_points as p')
        .innerJoin('entries as e', 'e.id', 'p.entry_id')
        .select(['p.entry_id', 'e.uuid', 'p.x', 'p.y', 'p.z', 'p.point_size'])
        .where('p.fit', '=', fit)
        .where('p.entry_id', '>', after)
        .where('e.state', '=', 'visible')
        .orderBy('p.entry_id')
        .limit(pageRows)
        .execute();
      if (rows.length > 0) yield rows.map(({ uuid, x, y, z, point_size }) => ({ uuid, x, y, z, point_size }));
      if (rows.length < pageRows) return;
      after = rows.at(-1)!.entry_id;
      await giveWay();
    }
  }

  /** answer reads the newest complete stored answer of `fit`, or null. */
  async answer(fit: number): Promise<GalaxyAnswer | null> {
    const row = await this.db
      .selectFrom('galaxy_answers')
      .select(['id', 'fit', 'revision', 'stars', 'chunks'])
      .where('fit', '=', fit)
      .where('complete', '=', 1)
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row ? { id: Number(row.id), fit: Number(row.fit), revision: Number(row.revision), stars: Number(row.stars), chunks: Number(row.chunks) } : null;
  }

  /** answerRanges reads where each chunk of a stored answer starts and ends (one small row per chunk). */
  async answerRanges(answer: number, format: string): Promise<AnswerChunkRange[]> {
    const rows = await this.db
      .selectFrom('galaxy_answer_chunks')
      .select(['seq', 'first_uuid', 'last_uuid'])
      .where('answer', '=', answer)
      .where('format', '=', format)
      .orderBy('seq')
      .execute();
    return rows.map((row) => ({ seq: Number(row.seq), firstUuid: row.first_uuid, lastUuid: row.last_uuid }));
  }

  /** answerChunk reads the bytes of one chunk of a stored answer, or null when it is gone (a newer answer replaced it). */
  async answerChunk(answer: number, format: string, seq: number): Promise<Buffer | null> {
    const row = await this.db
      .selectFrom('galaxy_answer_chunks')
      .select('bytes')
      .where('answer', '=', answer)
      .where('format', '=', format)
      .where('seq', '=', seq)
      .executeTakeFirst();
    return row ? Buffer.from(row.bytes.buffer, row.bytes.byteOffset, row.bytes.byteLength) : null;
  }

  /**
   * entryKeysChangedAfter reads the keys (uuids) of entry changes in the log after `revision`, up to
   * `limit` of them in revision order, with the revision of the last one read.
   */
  async entryKeysChangedAfter(revision: number, limit: number): Promise<{ keys: string[]; last: number; full: boolean }> {
    const rows = await this.db
      .selectFrom('changes')
      .select(['revision', 'key'])
      .where('revision', '>', revision)
      .where('type', 'like', 'entry.%')
      .orderBy('revision')
      .limit(limit)
      .execute();
    return { keys: rows.map((row) => row.key), last: rows.length === 0 ? revision : Number(rows.at(-1)!.revision), full: rows.length === limit };
  }

  /** countEntryChangesAfter counts the entry changes in the log after `revision`, up to `cap` (counted by the database). */
  async countEntryChangesAfter(revision: number, cap: number): Promise<number> {
    const { count } = await this.db
      .selectFrom((eb) => eb.selectFrom('changes').select('revision').where('revision', '>', revision).where('type', 'like', 'entry.%').limit(cap).as('c'))
      .select((eb) => eb.fn.countAll<number | string>().as('count'))
      .executeTakeFirstOrThrow();
    return Number(count);
  }

  /** changesFloor is the revision up to which the change log may have been pruned. */
  async changesFloor(): Promise<number> {
    const row = await this.db.selectFrom('meta').select('value').where('key', '=', 'changes_floor').executeTakeFirst();
    return Number(row?.value ?? 0);
  }

  /** entriesNow reads these entries as they are now, with their points in `fit` (entries deleted are absent). */
  async entriesNow(fit: number, uuids: readonly string[]): Promise<EntryNow[]> {
    const found: EntryNow[] = [];
    for (let start = 0; start < uuids.length; start += WRITE_ROWS) {
      const rows = await this.db
        .selectFrom('entries as e')
        .leftJoin('galaxy_points as p', (join) => join.onRef('p.entry_id', '=', 'e.id').on('p.fit', '=', fit))
        .select(['e.uuid', 'e.state', 'e.updated_at', 'p.entry_updated_at', 'p.x', 'p.y', 'p.z', 'p.point_size'])
        .where('e.uuid', 'in', uuids.slice(start, start + WRITE_ROWS))
        .execute();
      for (const row of rows) {
        const point = row.x === null || row.y === null || row.z === null || row.point_size === null ? null : { uuid: row.uuid, x: row.x, y: row.y, z: row.z, point_size: row.point_size };
        found.push({ uuid: row.uuid, visible: row.state === 'visible', point, current: point !== null && Number(row.entry_updated_at) === Number(row.updated_at) });
      }
      if (start + WRITE_ROWS < uuids.length) await giveWay();
    }
    return found;
  }

  /**
   * pointsByUuid walks the stars of `fit` whose entries are visible, in uuid order (the order of the
   * stored answers), in pages, giving way to other work between pages. The walk follows the uuid
   * index (a cross join keeps SQLite from starting at the points and sorting them all for each page);
   * hidden entries are skipped here rather than by the index the state filter would pick.
   */
  async *pointsByUuid(fit: number, pageRows = UUID_PAGE_ROWS): AsyncGenerator<GalaxyPoint[]> {
    let after = '';
    for (;;) {
      const rows = await this.db
        .selectFrom('entries as e')
        .crossJoin('galaxy_points as p')
        .select(['e.uuid', 'e.state', 'p.x', 'p.y', 'p.z', 'p.point_size'])
        .whereRef('p.entry_id', '=', 'e.id')
        .where('p.fit', '=', fit)
        .where('e.uuid', '>', after)
        .orderBy('e.uuid')
        .limit(pageRows)
        .execute();
      const visible = rows.filter((row) => row.state === 'visible').map(({ uuid, x, y, z, point_size }) => ({ uuid, x, y, z, point_size }));
      if (visible.length > 0) yield visible;
      if (rows.length < pageRows) return;
      after = rows.at(-1)!.uuid;
      await giveWay();
    }
  }

  /** startAnswer records a stored answer about to be written (not served until completeAnswer). */
  async startAnswer(id: number, fit: number, revision: number, now: number): Promise<void> {
    await this.db.insertInto('galaxy_answers').values({ id, fit, revision, stars: 0, chunks: 0, complete: 0, created_at: now }).execute();
  }

  /** writeAnswerChunks stores chunks of an answer being written, in one short transaction. */
  async writeAnswerChunks(answer: number, chunks: readonly { format: string; seq: number; firstUuid: string; lastUuid: string; stars: number; bytes: Buffer }[]): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      for (const chunk of chunks) {
        await trx
          .insertInto('galaxy_answer_chunks')
          .values({ answer, format: chunk.format, seq: chunk.seq, first_uuid: chunk.firstUuid, last_uuid: chunk.lastUuid, stars: chunk.stars, bytes: chunk.bytes })
          .execute();
      }
    });
  }

  /** completeAnswer makes a written answer the one served for its fit. */
  async completeAnswer(id: number, stars: number, chunks: number): Promise<void> {
    await this.db.updateTable('galaxy_answers').set({ stars, chunks, complete: 1 }).where('id', '=', id).execute();
  }

  /**
   * dropAnswersBut deletes every stored answer but `keep` (ids), a chunk at a time: requests still
   * streaming the previous answer keep it while the next one is written.
   */
  async dropAnswersBut(keep: readonly number[]): Promise<void> {
    const victims = await this.db.selectFrom('galaxy_answers').select('id').where('id', 'not in', keep.length > 0 ? keep : [-1]).execute();
    for (const { id } of victims) await this.dropAnswer(Number(id));
  }

  /** dropAnswer deletes a stored answer, a few chunks at a time. */
  async dropAnswer(id: number): Promise<void> {
    for (;;) {
      const chunks = await this.db.selectFrom('galaxy_answer_chunks').select(['format', 'seq']).where('answer', '=', id).limit(50).execute();
      if (chunks.length === 0) break;
      await this.db.transaction().execute(async (trx) => {
        for (const { format, seq } of chunks) await trx.deleteFrom('galaxy_answer_chunks').where('answer', '=', id).where('format', '=', format).where('seq', '=', seq).execute();
      });
      await giveWay();
    }
    await this.db.deleteFrom('galaxy_answers').where('id', '=', id).execute();
  }

  /** answerIds lists the stored answers, newest first, complete or not. */
  async answerIds(): Promise<{ id: number; fit: number; complete: boolean }[]> {
    const rows = await this.db.selectFrom('galaxy_answers').select(['id', 'fit', 'complete']).orderBy('id', 'desc').execute();
    return rows.map((row) => ({ id: Number(row.id), fit: Number(row.fit), complete: Number(row.complete) === 1 }));
  }

  // ---- For the computation (services/galaxy/) ----

  /** revision reads the entries' revision now. */
  revision(): Promise<number> {
    return readRevision(this.db);
  }

  /** model reads the stored model of the current layout. */
  async model(): Promise<{ fit: number; model: Uint8Array } | null> {
    const row = await this.db.selectFrom('galaxy_layout').select(['fit', 'model']).where('id', '=', 1).executeTakeFirst();
    return row ? { fit: Number(row.fit), model: row.model } : null;
  }

  /** countVisible counts the visible entries. */
  async countVisible(): Promise<number> {
    const { count } = await this.db
      .selectFrom('entries')
      .select((eb) => eb.fn.countAll<number | string>().as('count'))
      .where('state', '=', 'visible')
      .executeTakeFirstOrThrow();
    return Number(count);
  }

  /**
   * visibleKeys walks the ids and uuids of the visible entries, in pages. Each page is read by the
   * primary key alone and hidden entries are skipped here: with a condition on the state, SQLite
   * picks the state index and sorts every visible entry for each page, which makes the walk
   * quadratic in the entries (test/hardening/query-plans.test.ts).
   */
  async *visibleKeys(pageRows = 20_000): AsyncGenerator<{ id: number; uuid: string }[]> {
    let after = -1;
    for (;;) {
      const rows = await this.keysPage(after, pageRows).execute();
      const visible = rows.filter((row) => row.state === 'visible').map(({ id, uuid }) => ({ id, uuid }));
      if (visible.length > 0) yield visible;
      if (rows.length < pageRows) return;
      after = rows.at(-1)!.id;
      await giveWay();
    }
  }

  /** keysPage is the statement of a page of visibleKeys: entries after id `after`, whatever their state. */
  keysPage(after: number, pageRows: number) {
    return this.db.selectFrom('entries').select(['id', 'uuid', 'state']).where('id', '>', after).orderBy('id').limit(pageRows);
  }

  /** entriesPage is the statement of a page of visibleEntries: entries after id `after`, whatever their state. */
  entriesPage(after: number, pageRows: number) {
    return this.db.selectFrom('entries').select(['id', 'text', 'updated_at', 'state']).where('id', '>', after).orderBy('id').limit(pageRows);
  }

  /** visibleEntries walks the visible entries with their texts, in pages, in id order: by the primary key alone, as visibleKeys. */
  async *visibleEntries(pageRows = 2000): AsyncGenerator<EntryToPlace[]> {
    let after = -1;
    for (;;) {
      const rows = await this.entriesPage(after, pageRows).execute();
      const visible = rows.filter((row) => row.state === 'visible').map(toPlace);
      if (visible.length > 0) yield visible;
      if (rows.length < pageRows) return;
      after = rows.at(-1)!.id;
      await giveWay();
    }
  }

  /** entriesByIds reads the texts of these entries (those still there), in id order. */
  async entriesByIds(ids: readonly number[]): Promise<EntryToPlace[]> {
    const found: EntryToPlace[] = [];
    const sorted = [...ids].sort((a, b) => a - b);
    for (let start = 0; start < sorted.length; start += 500) {
      const rows = await this.db
        .selectFrom('entries')
        .select(['id', 'text', 'updated_at'])
        .where('id', 'in', sorted.slice(start, start + 500))
        .orderBy('id')
        .execute();
      found.push(...rows.map(toPlace));
    }
    return found;
  }

  /**
   * pending lists visible entries that `fit` does not show as they are: no point yet, a point placed
   * before the entry last changed, or (after a refit) a point of another fit only.
   */
  async pending(fit: number, limit: number): Promise<EntryToPlace[]> {
    const rows = await this.db
      .selectFrom('entries as e')
      .leftJoin('galaxy_points as p', (join) => join.onRef('p.entry_id', '=', 'e.id').on('p.fit', '=', fit))
      .select(['e.id', 'e.text', 'e.updated_at'])
      .where('e.state', '=', 'visible')
      .where((eb) => eb.or([eb('p.entry_id', 'is', null), eb('p.entry_updated_at', '!=', eb.ref('e.updated_at'))]))
      .orderBy('e.id')
      .limit(limit)
      .execute();
    return rows.map(toPlace);
  }

  /** writeFitPoints stores points of a fit that is not current yet (no conflicts: a new fit number). */
  async writeFitPoints(fit: number, points: readonly PlacedPoint[]): Promise<void> {
    for (let start = 0; start < points.length; start += WRITE_TRANSACTION_ROWS) {
      const chunk = points.slice(start, start + WRITE_TRANSACTION_ROWS);
      await this.db.transaction().execute(async (trx) => {
        for (let at = 0; at < chunk.length; at += WRITE_ROWS) {
          await trx.insertInto('galaxy_points').values(chunk.slice(at, at + WRITE_ROWS).map((point) => pointRow(fit, point))).execute();
        }
      });
      await giveWay();
    }
  }

  /**
   * activateFit makes `fit` the current layout, unless another fit became current since `previousFit`
   * was read (another process refitted meanwhile): then it returns false and stores nothing.
   */
  async activateFit(
    fit: number,
    previousFit: number | null,
    layout: { revision: number; fittedCount: number; modelVersion: number; model: Uint8Array; now: number },
  ): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const current = await trx.selectFrom('galaxy_layout').select(['fit', 'version']).where('id', '=', 1).executeTakeFirst();
      if ((current ? Number(current.fit) : null) !== previousFit) return false;
      const values = {
        fit,
        version: current ? Number(current.version) + 1 : 1,
        revision: layout.revision,
        fitted_count: layout.fittedCount,
        placed_since_fit: 0,
        model_version: layout.modelVersion,
        model: layout.model,
        fitted_at: layout.now,
        updated_at: layout.now,
      };
      if (current) await trx.updateTable('galaxy_layout').set(values).where('id', '=', 1).execute();
      else await trx.insertInto('galaxy_layout').values({ id: 1, ...values }).execute();
      return true;
    });
  }

  /** deleteOtherFits removes the points of every fit but `fit`, a page at a time. */
  async deleteOtherFits(fit: number): Promise<number> {
    let deleted = 0;
    for (;;) {
      const victims = await this.db.selectFrom('galaxy_points').select(['fit', 'entry_id']).where('fit', '!=', fit).limit(WRITE_TRANSACTION_ROWS).execute();
      if (victims.length === 0) return deleted;
      const byFit = new Map<number, number[]>();
      for (const { fit: old, entry_id } of victims) byFit.set(Number(old), [...(byFit.get(Number(old)) ?? []), entry_id]);
      for (const [old, ids] of byFit) {
        for (let at = 0; at < ids.length; at += WRITE_ROWS) {
          await this.db.deleteFrom('galaxy_points').where('fit', '=', old).where('entry_id', 'in', ids.slice(at, at + WRITE_ROWS)).execute();
        }
      }
      deleted += victims.length;
      await giveWay();
    }
  }

  /**
   * savePlacement stores points placed into the current fit and counts them towards the next refit,
   * unless `fit` is no longer current (false). `revision` is what the layout reflects afterwards, when
   * known (every pending entry placed).
   */
  async savePlacement(fit: number, points: readonly PlacedPoint[], revision: number | null, now: number): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const current = await trx.selectFrom('galaxy_layout').select(['fit']).where('id', '=', 1).executeTakeFirst();
      if (!current || Number(current.fit) !== fit) return false;
      for (let at = 0; at < points.length; at += WRITE_ROWS) {
        await trx
          .insertInto('galaxy_points')
          .values(points.slice(at, at + WRITE_ROWS).map((point) => pointRow(fit, point)))
          .onConflict((oc) =>
            oc.columns(['fit', 'entry_id']).doUpdateSet((eb) => ({
              entry_updated_at: eb.ref('excluded.entry_updated_at'),
              x: eb.ref('excluded.x'),
              y: eb.ref('excluded.y'),
              z: eb.ref('excluded.z'),
              point_size: eb.ref('excluded.point_size'),
            })),
          )
          .execute();
      }
      await trx
        .updateTable('galaxy_layout')
        .set((eb) => ({
          version: eb('version', '+', 1),
          placed_since_fit: eb('placed_since_fit', '+', points.length),
          updated_at: now,
          ...(revision === null ? {} : { revision }),
        }))
        .where('id', '=', 1)
        .execute();
      return true;
    });
  }

  /** markRevision records that the layout reflects `revision` (a change that moved no star, e.g. a hidden entry). */
  async markRevision(fit: number, revision: number, now: number): Promise<void> {
    await this.db.updateTable('galaxy_layout').set({ revision, updated_at: now }).where('id', '=', 1).where('fit', '=', fit).execute();
  }
}

function toPlace(row: { id: number; text: string; updated_at: number | string }): EntryToPlace {
  return { id: row.id, text: row.text, updatedAt: Number(row.updated_at) };
}

function pointRow(fit: number, point: PlacedPoint) {
  return {
    fit,
    entry_id: point.entryId,
    entry_updated_at: point.entryUpdatedAt,
    x: point.x,
    y: point.y,
    z: point.z,
    point_size: point.pointSize,
  };
}
