/**
 * The galaxy's storage: the current layout (one row: which fit, its version, the entries revision it
 * reflects, the model that places new entries) and its points (one per entry and fit).
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

/** A star of a fit with its entry's key and whether that entry is visible now. */
export interface StoredPoint extends GalaxyPoint {
  entryId: number;
  visible: boolean;
}

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

/** Rows per statement when writing points (7 parameters each: far below either engine's limit). */
const WRITE_ROWS = 500;
/** Rows per transaction when writing a fit's points: each holds SQLite's write lock only briefly. */
const WRITE_TRANSACTION_ROWS = 10_000;
/** Rows per page when serving: a few milliseconds of the event loop each. */
export const SERVE_PAGE_ROWS = 2000;
/** Ids per page when reading the visible entries' ids. */
const ID_PAGE_ROWS = 20_000;
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

  /** allPoints walks every star of `fit`, hidden entries' too (marked), in pages, in entry order. */
  async *allPoints(fit: number, pageRows = SERVE_PAGE_ROWS): AsyncGenerator<StoredPoint[]> {
    let after = -1;
    for (;;) {
      const rows = await this.db
        .selectFrom('galaxy_points as p')
        .innerJoin('entries as e', 'e.id', 'p.entry_id')
        .select(['p.entry_id', 'e.uuid', 'e.state', 'p.x', 'p.y', 'p.z', 'p.point_size'])
        .where('p.fit', '=', fit)
        .where('p.entry_id', '>', after)
        .orderBy('p.entry_id')
        .limit(pageRows)
        .execute();
      if (rows.length > 0) {
        yield rows.map(({ entry_id, uuid, state, x, y, z, point_size }) => ({ entryId: entry_id, uuid, visible: state === 'visible', x, y, z, point_size }));
      }
      if (rows.length < pageRows) return;
      after = rows.at(-1)!.entry_id;
      await giveWay();
    }
  }

  /**
   * visibleIds reads the ids of the visible entries: the table in key order, a page at a time (a
   * range of its primary key; the state is checked here), giving way to other work between pages.
   */
  async visibleIds(): Promise<number[]> {
    const ids: number[] = [];
    for (let after = -1; ; ) {
      const rows = await this.db.selectFrom('entries').select(['id', 'state']).where('id', '>', after).orderBy('id').limit(ID_PAGE_ROWS).execute();
      for (const row of rows) if (row.state === 'visible') ids.push(row.id);
      if (rows.length < ID_PAGE_ROWS) return ids;
      after = rows.at(-1)!.id;
      await giveWay();
    }
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

  /** visibleKeys walks the ids and uuids of the visible entries, in pages. */
  async *visibleKeys(pageRows = 20_000): AsyncGenerator<{ id: number; uuid: string }[]> {
    let after = -1;
    for (;;) {
      const rows = await this.db
        .selectFrom('entries')
        .select(['id', 'uuid'])
        .where('state', '=', 'visible')
        .where('id', '>', after)
        .orderBy('id')
        .limit(pageRows)
        .execute();
      if (rows.length > 0) yield rows;
      if (rows.length < pageRows) return;
      after = rows.at(-1)!.id;
      await giveWay();
    }
  }

  /** visibleEntries walks the visible entries with their texts, in pages, in id order. */
  async *visibleEntries(pageRows = 2000): AsyncGenerator<EntryToPlace[]> {
    let after = -1;
    for (;;) {
      const rows = await this.db
        .selectFrom('entries')
        .select(['id', 'text', 'updated_at'])
        .where('state', '=', 'visible')
        .where('id', '>', after)
        .orderBy('id')
        .limit(pageRows)
        .execute();
      if (rows.length > 0) yield rows.map(toPlace);
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
