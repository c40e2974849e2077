/** The layout computation on its own: text vectors, UMAP fit and transform, framing, sizes, the stored model. */
import { describe, expect, it } from 'vitest';
import { features } from '../../src/services/galaxy/features.ts';
import { HALF_SPAN, LayoutModel, LIMIT, MIN_UMAP_TEXTS, pointSize } from '../../src/services/galaxy/layout.ts';
import { fitTextSpace } from '../../src/services/galaxy/text-space.ts';
import { families } from './corpus.ts';
import { knnPurity } from './quality.ts';

const sample = families(30, 11);
const texts = sample.map((f) => f.text);

function nearestLabels(points: Float32Array, from: Float32Array, labels: string[], i: number, k: number): string[] {
  const d: [number, number][] = [];
  for (let j = 0; j < labels.length; j++) {
    d.push([Math.hypot(from[i * 3]! - points[j * 3]!, from[i * 3 + 1]! - points[j * 3 + 1]!, from[i * 3 + 2]! - points[j * 3 + 2]!), j]);
  }
  return d.sort((a, b) => a[0] - b[0]).slice(0, k).map(([, j]) => labels[j]!);
}

describe('the galaxy layout', () => {
  it('is the same for the same texts and seed, framed within ±LIMIT with the central 98% spanning ±HALF_SPAN', async () => {
    const a = await LayoutModel.fit(texts, 7);
    const b = await LayoutModel.fit(texts, 7);
    expect(b.points).toEqual(a.points);
    for (let axis = 0; axis < 3; axis++) {
      const values = texts.map((_, i) => a.points[i * 3 + axis]!).sort((x, y) => x - y);
      expect(values.every((v) => Number.isFinite(v) && Math.abs(v) <= LIMIT)).toBe(true);
      // 90 points: the 1st and 99th percentiles sit at ±HALF_SPAN, so the extremes are just beyond.
      expect(values[0]!).toBeLessThan(-HALF_SPAN + 0.5);
      expect(values.at(-1)!).toBeGreaterThan(HALF_SPAN - 0.5);
    }
  });

  it('places new texts next to their own kind, with a model read back from its bytes', async () => {
    const { model, points } = await LayoutModel.fit(texts, 7);
    const restored = LayoutModel.restore(model.toBytes());
    const fresh = families(40, 99).filter((f) => !texts.includes(f.text)).slice(0, 30);
    const placed = await restored.place(fresh.map((f) => f.text));
    const labels = sample.map((f) => f.family);
    let same = 0;
    fresh.forEach((f, i) => (same += nearestLabels(points, placed, labels, i, 5).filter((l) => l === f.family).length));
    expect(same / (fresh.length * 5)).toBeGreaterThan(0.9);
    // A fitted text placed again lands by its fitted place, nearly always among the 15 fitted points
    // nearest to it (the transform finds its true neighbours; with umap-js's own search, it did not).
    const again = await model.place(texts.slice(0, 10));
    const ids = texts.map((_, j) => String(j));
    const near = Array.from({ length: 10 }, (_, i) => nearestLabels(points, again, ids, i, 15).includes(String(i)));
    expect(near.filter(Boolean).length).toBeGreaterThanOrEqual(8);
    // Where a text lands depends on its batch alone: the model read back places it the same.
    expect(await restored.place(texts.slice(0, 10))).toEqual(again);
    expect(knnPurity(points, labels, 5)).toBeGreaterThan(0.9);
  });

  it('lays out a handful of texts on a ring, which cannot place more', async () => {
    for (const count of [0, 1, 2, MIN_UMAP_TEXTS - 1]) {
      const { model, points } = await LayoutModel.fit(texts.slice(0, count), 7);
      expect(points).toHaveLength(count * 3);
      expect([...points].every((v) => Number.isFinite(v) && Math.abs(v) <= LIMIT)).toBe(true);
      expect(model.canPlace).toBe(false);
      expect(LayoutModel.restore(model.toBytes()).canPlace).toBe(false);
    }
    const { model } = await LayoutModel.fit(texts.slice(0, MIN_UMAP_TEXTS), 7);
    expect(model.canPlace).toBe(true);
    expect(await model.place(['one more text about a cat'])).toHaveLength(3);
  });

  it('sizes a star by the length of its text, from 0.1 to 0.6', () => {
    expect(pointSize('a')).toBe(0.146);
    expect(pointSize('x'.repeat(2000))).toBe(0.6);
    expect(pointSize('x'.repeat(5000))).toBe(0.6);
    expect(pointSize('🐈'.repeat(10))).toBe(pointSize('x'.repeat(10)));
    expect(pointSize('Breaking news: the tram rattled past the depot.')).toBeGreaterThan(0.3);
  });
});

describe('text vectors', () => {
  it('give every text features, punctuation-only texts and scripts without spaces included', () => {
    expect(features('?!').words.size).toBe(2);
    expect(features('猫が窓辺で寝ている').grams.size).toBeGreaterThan(5);
    expect(features('Cats, CATS and cats').words.size).toBe(2);
  });

  it('put texts that share topic words closer than texts that do not', () => {
    const space = fitTextSpace(texts, 3);
    const dot = (a: Float32Array, b: Float32Array) => a.reduce((sum, v, i) => sum + v * b[i]!, 0);
    const vectors = texts.map((text) => space.embed(text));
    let same = 0;
    let other = 0;
    let sameCount = 0;
    let otherCount = 0;
    for (let i = 0; i < texts.length; i++) {
      for (let j = i + 1; j < texts.length; j++) {
        const similarity = dot(vectors[i]!, vectors[j]!);
        if (sample[i]!.family === sample[j]!.family) {
          same += similarity;
          sameCount++;
        } else {
          other += similarity;
          otherCount++;
        }
      }
    }
    expect(same / sameCount).toBeGreaterThan(other / otherCount + 0.1);
    expect([...space.embed('zzqx vvbnm')].every((v) => v === 0)).toBe(true);
  });

  it('have a vocabulary of the features in two texts or more, the most frequent first, ties by hash', () => {
    const counts = new Map<number, number>();
    for (const text of texts) {
      const found = features(text);
      for (const group of [found.words, found.grams]) for (const hash of group.keys()) counts.set(hash, (counts.get(hash) ?? 0) + 1);
    }
    const expected = [...counts].filter(([, count]) => count >= 2).sort((a, b) => b[1] - a[1] || a[0] - b[0]).map(([hash]) => hash);
    expect([...fitTextSpace(texts, 3).data.vocabulary]).toEqual(expected);
  });
});
