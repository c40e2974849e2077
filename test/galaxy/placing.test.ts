/**
 * What keeps a refit's memory bounded and lets it use more than one core: the sample chosen holding
 * only the sample's keys, batches run on a bounded number of lanes, and a helper thread that places
 * a batch exactly as the galaxy thread does.
 */
import { describe, expect, it } from 'vitest';
import { LayoutModel } from '../../src/services/galaxy/layout.ts';
import { Lanes, RefitPlacers } from '../../src/services/galaxy/placing.ts';
import { LowestKeys, sampleIds, uuidHash } from '../../src/services/galaxy/sample.ts';
import { families } from './corpus.ts';

const uuid = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;

describe("a refit's sample", () => {
  it('is the entries whose uuids hash lowest, chosen holding no more keys than the sample', async () => {
    const keys = Array.from({ length: 20_000 }, (_, i) => ({ id: i + 1, uuid: uuid(i * 7919) }));
    let largest = 0;
    async function* pages() {
      for (let at = 0; at < keys.length; at += 1000) yield keys.slice(at, at + 1000);
    }
    const lowest = new LowestKeys(500);
    for (const { id, uuid: key } of keys) {
      lowest.add(uuidHash(key), id);
      largest = Math.max(largest, lowest.size);
    }
    expect(largest).toBe(500);
    const bySort = keys
      .map((k) => ({ id: k.id, hash: uuidHash(k.uuid) }))
      .sort((a, b) => a.hash - b.hash || a.id - b.id)
      .slice(0, 500)
      .map((k) => k.id)
      .sort((a, b) => a - b);
    expect(lowest.sortedIds()).toEqual(bySort);
    expect(await sampleIds(pages(), 500)).toEqual(bySort);
    // Fewer entries than the sample: all of them.
    expect(await sampleIds(pages(), 50_000)).toEqual(keys.map((k) => k.id));
    // Ties on the hash go by id.
    const tied = new LowestKeys(2);
    for (const id of [5, 3, 9, 1]) tied.add(7, id);
    expect(tied.sortedIds()).toEqual([1, 3]);
  });
});

describe('lanes', () => {
  it('run at most one job per lane at a time, and report the first failure', async () => {
    const lanes = new Lanes(['a', 'b']);
    let running = 0;
    let most = 0;
    const used = new Set<string>();
    for (let i = 0; i < 10; i++) {
      await lanes.run(async (lane) => {
        used.add(lane);
        most = Math.max(most, ++running);
        await new Promise((resolve) => setTimeout(resolve, 5));
        running--;
      });
      expect(lanes.busy).toBeLessThanOrEqual(2);
    }
    await lanes.drain();
    expect(most).toBe(2);
    expect([...used].sort()).toEqual(['a', 'b']);
    await lanes.run(async () => {
      throw new Error('broken');
    });
    await expect(lanes.drain()).rejects.toThrow('broken');
    await expect(lanes.run(async () => {})).rejects.toThrow('broken');
  });
});

describe('a helper thread', () => {
  it('places a batch exactly as the galaxy thread does', async () => {
    const texts = families(30, 11).map((f) => f.text);
    const { model } = await LayoutModel.fit(texts, 7);
    const placers = RefitPlacers.create(1, model, model.toBytes(), 2, async () => {});
    try {
      expect(placers.placers).toHaveLength(3);
      const [local, helper] = [placers.placers[0]!, placers.placers[1]!];
      const batch = families(40, 99)
        .map((f) => f.text)
        .filter((text) => !texts.includes(text))
        .slice(0, 25);
      const here = await local(batch);
      // The first batch brings the model to the thread, the second finds it there.
      expect(await helper(batch)).toEqual(here);
      expect(await helper(batch.slice(0, 5))).toEqual(await local(batch.slice(0, 5)));
    } finally {
      await placers.close();
    }
  });
});
