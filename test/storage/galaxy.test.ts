/**
 * The galaxy's computation against a real database (both engines): the first layout, new and edited
 * entries placed into it, the refit threshold, points leaving with their entries, a second process
 * picking up the stored model, one computing process at a time, and a refit placed on helper threads
 * (the same layout, a bounded number of pages held at once).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openDatabase } from '../../src/db/database.ts';
import { GALAXY_LOCK, GalaxyComputer, REFIT_FRACTION } from '../../src/services/galaxy/compute.ts';
import type { GalaxyPoint } from '../../src/domain/records.ts';
import { GalaxyStore } from '../../src/storage/galaxy.ts';
import { families } from '../galaxy/corpus.ts';
import { createTestApp, entry, setState, type TestContext } from '../helper.ts';

async function stars(t: TestContext): Promise<Map<string, GalaxyPoint>> {
  const layout = await t.storage.galaxy.layout();
  const found = new Map<string, GalaxyPoint>();
  if (layout === null) return found;
  for await (const page of t.storage.galaxy.points(layout.fit, 7)) for (const point of page) found.set(point.uuid, point);
  return found;
}

const revisionOf = async (t: TestContext) => {
  t.storage.cache.invalidate();
  return t.storage.cache.current();
};

describe('the galaxy computation', () => {
  let t: TestContext;
  let computer: GalaxyComputer;
  const texts = families(40, 5);
  const initial = texts.slice(0, 60).map((f) => entry(f.text));
  const later = texts.slice(60).map((f) => entry(f.text));

  beforeAll(async () => {
    t = await createTestApp({ entries: initial });
    computer = new GalaxyComputer(t.database);
  });
  afterAll(() => t.close());

  it('has no layout before the first round, then one star per visible entry', async () => {
    expect(await t.storage.galaxy.layout()).toBeNull();
    const result = await computer.run();
    expect(result).toMatchObject({ action: 'fitted', points: 60, sample: 60, superseded: false });
    const layout = (await t.storage.galaxy.layout())!;
    expect(layout).toMatchObject({ fitted_count: 60, placed_since_fit: 0, revision: await revisionOf(t) });
    const found = await stars(t);
    expect([...found.keys()].sort()).toEqual(initial.map((e) => e.uuid).sort());
    for (const point of found.values()) {
      for (const value of [point.x, point.y, point.z]) expect(Math.abs(value)).toBeLessThanOrEqual(10);
      expect(point.point_size).toBeGreaterThanOrEqual(0.1);
      expect(point.point_size).toBeLessThanOrEqual(0.6);
    }
    expect(await computer.run()).toEqual({ action: 'none', fit: layout.fit });
  });

  it('places new entries into the layout without moving the others', async () => {
    const before = await stars(t);
    const { version, fit } = (await t.storage.galaxy.layout())!;
    await t.storage.entries.insertEntries(later.slice(0, 4));
    expect(await computer.run()).toEqual({ action: 'placed', fit, placed: 4 });
    const after = await stars(t);
    expect(after.size).toBe(64);
    for (const [uuid, point] of before) expect(after.get(uuid)).toEqual(point);
    for (const added of later.slice(0, 4)) expect(after.has(added.uuid)).toBe(true);
    expect(await t.storage.galaxy.layout()).toMatchObject({ fit, version: version + 1, placed_since_fit: 4, revision: await revisionOf(t) });
  });

  it('places an edited entry again, and lets hidden and deleted entries go at once', async () => {
    const { fit } = (await t.storage.galaxy.layout())!;
    const edited = initial[0]!.uuid;
    const before = (await stars(t)).get(edited)!;
    await t.storage.entries.update(edited, { text: `${later[10]!.text} Twice.` }, 'test');
    expect(await computer.run()).toEqual({ action: 'placed', fit, placed: 1 });
    expect((await stars(t)).get(edited)).not.toEqual(before);

    await setState(t.storage, initial[1]!.uuid, 'hidden');
    await t.storage.entries.remove(initial[2]!.uuid, 'test');
    const found = await stars(t);
    expect(found.has(initial[1]!.uuid)).toBe(false);
    expect(found.has(initial[2]!.uuid)).toBe(false);
    // Nothing to place: the round only records that the layout reflects the new revision.
    expect(await computer.run()).toEqual({ action: 'none', fit });
    expect((await t.storage.galaxy.layout())!.revision).toBe(await revisionOf(t));
    await setState(t.storage, initial[1]!.uuid, 'visible');
    expect((await stars(t)).has(initial[1]!.uuid)).toBe(true);
  });

  it('a process that did not fit the layout places entries with the stored model', async () => {
    const other = await openDatabase(t.config.database);
    try {
      const { fit } = (await t.storage.galaxy.layout())!;
      await t.storage.entries.insertEntries(later.slice(4, 6));
      // The two new entries, and the one shown again (its state changed since it was placed).
      expect(await new GalaxyComputer(other).run()).toEqual({ action: 'placed', fit, placed: 3 });
      expect((await stars(t)).has(later[5]!.uuid)).toBe(true);
    } finally {
      await other.close();
    }
  });

  it(`fits anew once the placed entries reach ${REFIT_FRACTION * 100}% of the fitted ones, and keeps one fit's points`, async () => {
    const layout = (await t.storage.galaxy.layout())!;
    // 4 + 1 + 3 placed so far; 7 more reach a quarter of the 60 fitted.
    await t.storage.entries.insertEntries(later.slice(6, 12));
    expect((await computer.run()).action).toBe('placed');
    await t.storage.entries.insertEntries(later.slice(12, 13));
    const result = await computer.run();
    expect(result).toMatchObject({ action: 'fitted', points: 72, superseded: false });
    const refitted = (await t.storage.galaxy.layout())!;
    expect(refitted.fit).not.toBe(layout.fit);
    expect(refitted).toMatchObject({ fitted_count: 72, placed_since_fit: 0 });
    expect((await stars(t)).size).toBe(72);
    const rows = await t.database.db.selectFrom('galaxy_points').select(['fit']).execute();
    expect(rows.map((r) => Number(r.fit))).toEqual(Array(72).fill(refitted.fit));
  });

  it('gives the same layout for the same entries', async () => {
    const first = await stars(t);
    expect((await computer.run({ refit: true })).action).toBe('fitted');
    expect(await stars(t)).toEqual(first);
  });

  it('fits anew when the stored model cannot be read', async () => {
    const { fit } = (await t.storage.galaxy.layout())!;
    await t.database.db.updateTable('galaxy_layout').set({ model: new Uint8Array([1, 2, 3]) }).execute();
    await t.storage.entries.insertEntries([entry('Breaking news: the tram rattled past the depot again. Typical.')]);
    const result = await new GalaxyComputer(t.database).run();
    expect(result).toMatchObject({ action: 'fitted', superseded: false });
    expect((await t.storage.galaxy.layout())!.fit).not.toBe(fit);
  });

  it('stores nothing for a fit that is no longer current', async () => {
    const { fit } = (await t.storage.galaxy.layout())!;
    const stale = [{ entryId: 1, entryUpdatedAt: 0, x: 0, y: 0, z: 0, pointSize: 0.1 }];
    expect(await t.storage.galaxy.savePlacement(fit - 1, stale, null, Date.now())).toBe(false);
    expect(await t.storage.galaxy.savePlacement(fit, [], null, Date.now())).toBe(true);
  });

  it.runIf(process.env.TEST_DATABASE === 'postgres')('computes in one process at a time (advisory lock)', async () => {
    const other = await openDatabase(t.config.database);
    try {
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let locked!: () => void;
      const lockTaken = new Promise<void>((resolve) => (locked = resolve));
      const holder = other.quirks.tryExclusive(other.db, GALAXY_LOCK, async () => {
        locked();
        await held;
        return 'done';
      });
      await lockTaken;
      await t.storage.entries.insertEntries([entry('A cat sat on the lock and would not move.')]);
      expect(await computer.run()).toEqual({ action: 'busy' });
      release();
      expect(await holder).toBe('done');
      expect((await computer.run()).action).toBe('placed');
    } finally {
      await other.close();
    }
  });
});

describe('a refit on more than one thread', () => {
  let t: TestContext;
  const texts = families(100, 9);

  beforeAll(async () => {
    t = await createTestApp({ entries: texts.map((f) => entry(f.text)) });
  });
  afterAll(async () => {
    vi.restoreAllMocks();
    await t.close();
  });

  /** refit lays everything out anew, counting the pages read but not yet written. */
  async function refit(threads: number): Promise<{ stars: Map<string, GalaxyPoint>; held: number }> {
    let read = 0;
    let written = 0;
    let held = 0;
    const visibleEntries = GalaxyStore.prototype.visibleEntries;
    const writeFitPoints = GalaxyStore.prototype.writeFitPoints;
    const reading = vi.spyOn(GalaxyStore.prototype, 'visibleEntries').mockImplementation(async function* (this: GalaxyStore, pageRows?: number) {
      for await (const page of visibleEntries.call(this, pageRows)) {
        held = Math.max(held, ++read - written);
        yield page;
      }
    });
    const writing = vi.spyOn(GalaxyStore.prototype, 'writeFitPoints').mockImplementation(async function (this: GalaxyStore, fit, points) {
      await writeFitPoints.call(this, fit, points);
      // The sample's points are written once before the pages; the rest one write per page.
      if (points.length < 40) written++;
    });
    try {
      const result = await new GalaxyComputer(t.database, { threads, fitSample: 40, pageRows: 10 }).run({ refit: true });
      expect(result).toMatchObject({ action: 'fitted', points: 300, sample: 40, superseded: false });
    } finally {
      reading.mockRestore();
      writing.mockRestore();
    }
    expect(written).toBe(read);
    return { stars: await stars(t), held };
  }

  it('gives the same layout as on one thread, and holds a few pages at a time, not all', async () => {
    const one = await refit(1);
    const two = await refit(2);
    expect(two.stars.size).toBe(300);
    expect(two.stars).toEqual(one.stars);
    // 30 pages: one placed here, two given to the helper thread, one read and waiting.
    expect(one.held).toBeLessThanOrEqual(2);
    expect(two.held).toBeLessThanOrEqual(4);
  });
});
