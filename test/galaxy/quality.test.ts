/**
 * The galaxy's quality, end to end: 600 generated entries in three families (cats, weather, trains;
 * 200 each) are laid out by the computation and read back from the endpoint; the families must land
 * in separated regions: a silhouette above 0.5 and a nearest-neighbour purity above 0.9.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GalaxyComputer } from '../../src/services/galaxy/compute.ts';
import { createTestApp, entry, type TestContext } from '../helper.ts';
import { families } from './corpus.ts';
import { knnPurity, silhouette } from './quality.ts';

describe('three families of entries in the galaxy', () => {
  let t: TestContext;
  const generated = families(200);
  const entries = generated.map((f) => entry(f.text));
  const familyOf = new Map(entries.map((e, i) => [e.uuid, generated[i]!.family]));

  beforeAll(async () => {
    t = await createTestApp({ entries });
  });
  afterAll(() => t.close());

  it('land in separated regions', async () => {
    expect(await new GalaxyComputer(t.database).run()).toMatchObject({ action: 'fitted', points: 600 });
    const stars = (await t.app.inject('/api/v1/nonsense/galaxy?format=json')).json<Record<string, number | string>[]>();
    expect(stars).toHaveLength(600);
    const points = stars.flatMap((s) => [s.umap_dim_0 as number, s.umap_dim_1 as number, s.umap_dim_2 as number]);
    const labels = stars.map((s) => familyOf.get(s.uuid as string)!);
    const score = { silhouette: silhouette(points, labels), purity: knnPurity(points, labels, 10) };
    console.log(`galaxy quality on 3 × 200 generated entries: silhouette ${score.silhouette.toFixed(3)}, 10-NN purity ${score.purity.toFixed(3)}`);
    expect(score.silhouette).toBeGreaterThan(0.5);
    expect(score.purity).toBeGreaterThan(0.9);
  });
});
