/**
 * The galaxy's bodies from the stored answer (in small chunks here, so that changes fall in several
 * of them): the same stars as a walk of the database, before and after entries are hidden, shown
 * again, deleted, added and edited since the answer was written; whole or streamed; and walked from
 * the database when the answer cannot be used.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csvRecord, jsonItem } from '../../src/formats/galaxy.ts';
import { writeAnswer } from '../../src/services/galaxy/answer.ts';
import { GalaxyComputer } from '../../src/services/galaxy/compute.ts';
import { yieldToEvents } from '../../src/services/galaxy/layout.ts';
import { GalaxyBodies, type GalaxyView } from '../../src/services/galaxy/serve.ts';
import { createTestApp, entry, setState, type TestContext } from '../helper.ts';
import { families } from './corpus.ts';

async function text(view: GalaxyView, format: 'csv' | 'json'): Promise<{ text: string; whole: boolean }> {
  const body = await view.body(format);
  if (Buffer.isBuffer(body)) return { text: body.toString(), whole: true };
  let out = '';
  for await (const chunk of body) out += String(chunk);
  return { text: out, whole: false };
}

describe('galaxy bodies', () => {
  let t: TestContext;
  const entries = families(10, 4).map((f) => entry(f.text));
  const revision = () => t.storage.cache.current();

  /** The stars a walk of the database finds now, as sorted CSV records and JSON objects. */
  async function expected(): Promise<{ csv: string[]; json: string[] }> {
    const layout = (await t.storage.galaxy.layout())!;
    const csv: string[] = [];
    const json: string[] = [];
    for await (const page of t.storage.galaxy.pointsByUuid(layout.fit, 7)) {
      for (const point of page) {
        csv.push(csvRecord(point).slice(2));
        json.push(jsonItem(point));
      }
    }
    return { csv: csv.sort(), json: json.sort() };
  }

  /** compare checks a body in both formats against the database, and returns the view's tag. */
  async function compare(bodies: GalaxyBodies, stars: number): Promise<string> {
    const view = await bodies.view((await t.storage.galaxy.layout())!);
    const want = await expected();
    expect(want.csv).toHaveLength(stars);
    const csv = (await text(view, 'csv')).text;
    expect(csv.startsWith('uuid,umap_dim_0,umap_dim_1,umap_dim_2,point_size')).toBe(true);
    expect(csv.endsWith('\n')).toBe(false);
    expect(csv.split('\r\n').slice(1).sort()).toEqual(want.csv);
    const json = JSON.parse((await text(view, 'json')).text) as unknown[];
    expect(json.map((star) => JSON.stringify(star)).sort()).toEqual(want.json);
    return view.tag;
  }

  beforeAll(async () => {
    t = await createTestApp({ entries, revisionMaxAgeMs: 0 });
    await new GalaxyComputer(t.database).run();
    // Chunks of 4 stars: the 30 stars are in 8 of them.
    const layout = (await t.storage.galaxy.layout())!;
    await writeAnswer(t.storage.galaxy, layout.fit, layout.revision, Date.now(), yieldToEvents, 4);
  });
  afterAll(() => t.close());

  it('are the stored answer, then the answer with the changes since it was written', async () => {
    const layout = (await t.storage.galaxy.layout())!;
    const answer = (await t.storage.galaxy.answer(layout.fit))!;
    expect(answer).toMatchObject({ stars: 30, chunks: 8 });
    const bodies = new GalaxyBodies(t.storage.galaxy, revision, 1 << 20);
    const first = await compare(bodies, 30);
    expect(bodies.stars).toBe(0);

    await setState(t.storage, entries[3]!.uuid, 'hidden');
    await setState(t.storage, entries[4]!.uuid, 'hidden');
    await t.storage.entries.remove(entries[7]!.uuid, 'test');
    const second = await compare(bodies, 27);
    expect(second).not.toBe(first);

    // Shown again (its old point is served until it is placed anew), added, edited: then placed.
    await setState(t.storage, entries[4]!.uuid, 'visible');
    const added = entry('A kitten and a cat asleep on the warm windowsill, purring in the sun');
    await t.storage.entries.insertEntries([added]);
    await t.storage.entries.update(entries[9]!.uuid, { text: `${entries[9]!.text} Again.` }, 'test');
    await compare(bodies, 28);
    expect((await new GalaxyComputer(t.database).run()).action).toBe('placed');
    await compare(bodies, 29);
    expect(bodies.stars).toBe(3);
    // The answer was not written again: the changes came from the change log.
    expect((await t.storage.galaxy.answer(layout.fit))!.id).toBe(answer.id);

    for (const e of entries) if (e !== entries[7]) await setState(t.storage, e.uuid, 'hidden');
    await setState(t.storage, added.uuid, 'hidden');
    await compare(bodies, 0);
    const view = await bodies.view((await t.storage.galaxy.layout())!);
    expect((await text(view, 'json')).text).toBe('[]');
    expect((await text(view, 'csv')).text).toBe('uuid,umap_dim_0,umap_dim_1,umap_dim_2,point_size');
    for (const e of entries) if (e !== entries[7]) await setState(t.storage, e.uuid, 'visible');
    await compare(bodies, 29);
  });

  it('stream a body larger than the small-body size, the same bytes', async () => {
    const layout = (await t.storage.galaxy.layout())!;
    const whole = await new GalaxyBodies(t.storage.galaxy, revision, 1 << 20).view(layout);
    const streamed = await new GalaxyBodies(t.storage.galaxy, revision, 1 << 20, 100).view(layout);
    for (const format of ['csv', 'json'] as const) {
      const [a, b] = [await text(whole, format), await text(streamed, format)];
      expect([a.whole, b.whole]).toEqual([true, false]);
      expect(b.text).toBe(a.text);
    }
  });

  it('are walked from the database when the change log was pruned past the answer, or the overlay is over its budget', async () => {
    const layout = (await t.storage.galaxy.layout())!;
    const held = new GalaxyBodies(t.storage.galaxy, revision, 1 << 20);
    const stored = await held.view(layout);
    const storedCsv = (await text(stored, 'csv')).text;
    expect(held.bytes).toBeGreaterThan(100);
    // Over budget: the changed stars do not fit in 100 bytes.
    const small = new GalaxyBodies(t.storage.galaxy, revision, 100);
    const walked = await small.view(layout);
    expect(walked.tag).toBe(stored.tag);
    const walkedCsv = (await text(walked, 'csv')).text;
    expect(small.bytes).toBe(0);
    expect(walkedCsv.split('\r\n').sort()).toEqual(storedCsv.split('\r\n').sort());
    await compare(small, 29);

    const floor = await t.storage.galaxy.changesFloor();
    await t.database.db.updateTable('meta').set({ value: (await t.storage.galaxy.revision()) + 1 }).where('key', '=', 'changes_floor').execute();
    try {
      const pruned = await new GalaxyBodies(t.storage.galaxy, revision, 1 << 20).view(layout);
      expect((await text(pruned, 'csv')).text).toBe(walkedCsv);
    } finally {
      await t.database.db.updateTable('meta').set({ value: floor }).where('key', '=', 'changes_floor').execute();
    }
  });

  it('leave the changed stars out of every chunk when the chunks are not in the order of JavaScript strings', async () => {
    const layout = (await t.storage.galaxy.layout())!;
    const answer = (await t.storage.galaxy.answer(layout.fit))!;
    const chunk = (seq: number) => t.database.db.updateTable('galaxy_answer_chunks').where('answer', '=', answer.id).where('seq', '=', seq);
    const [first] = await t.storage.galaxy.answerRanges(answer.id, 'csv');
    // As a collation that does not sort like JavaScript would leave them.
    await chunk(0).set({ first_uuid: 'z' }).execute();
    try {
      await compare(new GalaxyBodies(t.storage.galaxy, revision, 1 << 20), 29);
    } finally {
      await chunk(0).set({ first_uuid: first!.firstUuid }).execute();
    }
  });

  it('are written again by the next round once the change log was pruned past the answer', async () => {
    const computer = new GalaxyComputer(t.database);
    await computer.run();
    const fit = (await t.storage.galaxy.layout())!.fit;
    const before = (await t.storage.galaxy.answer(fit))!;
    await setState(t.storage, entries[0]!.uuid, 'hidden');
    await setState(t.storage, entries[0]!.uuid, 'visible');
    expect((await computer.run()).action).toBe('placed');
    const layout = (await t.storage.galaxy.layout())!;
    expect(layout.revision).toBeGreaterThan(before.revision);
    expect((await t.storage.galaxy.answer(fit))!.id).toBe(before.id);
    const floor = await t.storage.galaxy.changesFloor();
    await t.database.db.updateTable('meta').set({ value: before.revision + 1 }).where('key', '=', 'changes_floor').execute();
    try {
      expect(await computer.run()).toMatchObject({ action: 'answered', stars: 29 });
      const after = (await t.storage.galaxy.answer(layout.fit))!;
      expect(after.id).not.toBe(before.id);
      expect(after.revision).toBe(layout.revision);
      expect((await computer.run()).action).toBe('none');
      await compare(new GalaxyBodies(t.storage.galaxy, revision, 1 << 20), 29);
      // The answer before is kept for requests still streaming it; the one before that is gone.
      expect((await t.storage.galaxy.answerIds()).map((answer) => answer.id)).toEqual([after.id, before.id]);
    } finally {
      await t.database.db.updateTable('meta').set({ value: floor }).where('key', '=', 'changes_floor').execute();
    }
  });
});
