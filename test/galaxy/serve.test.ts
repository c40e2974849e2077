/**
 * The galaxy's bodies: from the in-memory snapshot and streamed from the database (a galaxy too big
 * to hold), byte for byte the same, with hidden and deleted entries left out at once by both.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GalaxyComputer } from '../../src/services/galaxy/compute.ts';
import { GalaxyBodies, type GalaxyView } from '../../src/services/galaxy/serve.ts';
import { createTestApp, entry, setState, type TestContext } from '../helper.ts';
import { families } from './corpus.ts';

async function text(view: GalaxyView, format: 'csv' | 'json'): Promise<string> {
  const body = view.body(format);
  if (body instanceof Promise) return (await body).toString();
  let out = '';
  for await (const chunk of body) out += chunk;
  return out;
}

describe('galaxy bodies', () => {
  let t: TestContext;
  const entries = families(10, 4).map((f) => entry(f.text));

  beforeAll(async () => {
    t = await createTestApp({ entries, revisionMaxAgeMs: 0 });
    await new GalaxyComputer(t.database).run();
  });
  afterAll(() => t.close());

  it('are one body for requests at the same time, and a new one once the entries change', async () => {
    const held = new GalaxyBodies(t.storage.galaxy, () => t.storage.cache.current(), 1 << 20);
    const view = await held.view((await t.storage.galaxy.layout())!);
    const [a, b] = await Promise.all([view.body('csv'), view.body('csv')]);
    expect(a).toBe(b);
    expect(await view.body('json')).not.toBe(a);
    await setState(t.storage, entries[0]!.uuid, 'hidden');
    const after = await held.view((await t.storage.galaxy.layout())!);
    const c = (await after.body('csv')) as Buffer;
    expect(c).not.toBe(a);
    expect(c.toString()).not.toContain(entries[0]!.uuid);
    await setState(t.storage, entries[0]!.uuid, 'visible');
  });

  it('are the same from memory and streamed, before and after entries are hidden and deleted', async () => {
    const revision = () => t.storage.cache.current();
    const held = new GalaxyBodies(t.storage.galaxy, revision, 1 << 20);
    const streamed = new GalaxyBodies(t.storage.galaxy, revision, 0);
    // Within the budget by the estimate before reading, over it by the real size: streamed as well.
    const barely = new GalaxyBodies(t.storage.galaxy, revision, 30 * 200);
    const compare = async (count: number) => {
      const layout = (await t.storage.galaxy.layout())!;
      const [a, b, c] = [await held.view(layout), await streamed.view(layout), await barely.view(layout)];
      expect(a.tag).toBe(b.tag);
      for (const format of ['csv', 'json'] as const) {
        expect(await text(a, format)).toBe(await text(b, format));
        expect(await text(c, format)).toBe(await text(b, format));
      }
      expect(held.bytes).toBeGreaterThan(30 * 200);
      expect([streamed.bytes, barely.bytes]).toEqual([0, 0]);
      expect((await text(a, 'csv')).trim().split('\r\n')).toHaveLength(count + 1);
      expect(JSON.parse(await text(a, 'json'))).toHaveLength(count);
      return a.tag;
    };
    const first = await compare(30);
    await setState(t.storage, entries[3]!.uuid, 'hidden');
    await t.storage.entries.remove(entries[7]!.uuid, 'test');
    const second = await compare(28);
    expect(second).not.toBe(first);
    for (const e of entries) if (e !== entries[7]) await setState(t.storage, e.uuid, 'hidden');
    await compare(0);
    const layout = (await t.storage.galaxy.layout())!;
    expect(await text(await held.view(layout), 'json')).toBe('[]');
  });
});
