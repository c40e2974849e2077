/** The fit on typed arrays (umap.ts) against umap-js's own: the same neighbours and the same layout, bit for bit. */
import { createRequire } from 'node:module';
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import { UMAP } from 'umap-js';
import { describe, expect, it } from 'vitest';
import { UmapFit } from '../../src/services/galaxy/umap.ts';

const require = createRequire(import.meta.url);
const { findABParams } = require('umap-js/dist/umap.js') as { findABParams: (spread: number, minDist: number) => { a: number; b: number } };
const CURVE = findABParams(1, 0.1);

const seeded = (seed: number) => {
  const rng = xoroshiro128plus(seed);
  return () => uniformFloat64(rng);
};

function euclidean(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) {
    const d = a[i]! - b[i]!;
    sum += d * d;
  }
  return Math.sqrt(sum);
}

/**
 * Unit vectors in a few clusters, with exact duplicates and all-zero vectors among them (texts
 * with no word of the vocabulary), as the layout's vectors can be.
 */
function vectors(rows: number, dimensions: number, seed: number): Float32Array {
  const random = seeded(seed);
  const centres = Array.from({ length: 4 }, () => Array.from({ length: dimensions }, () => random() * 2 - 1));
  const data = new Float32Array(rows * dimensions);
  for (let i = 0; i < rows; i++) {
    const row = data.subarray(i * dimensions, (i + 1) * dimensions);
    if (i % 11 === 5) continue;
    if (i % 7 === 3 && i > 0) {
      row.set(data.subarray((i - 1) * dimensions, i * dimensions));
      continue;
    }
    const centre = centres[i % centres.length]!;
    let norm = 0;
    for (let d = 0; d < dimensions; d++) {
      row[d] = centre[d]! + (random() - 0.5) * 0.6;
      norm += row[d]! * row[d]!;
    }
    for (let d = 0; d < dimensions; d++) row[d]! /= Math.sqrt(norm);
  }
  return data;
}

describe('the UMAP fit on typed arrays', () => {
  it.each([
    [6, 5, 40],
    [16, 8, 40],
    [17, 48, 300],
    [120, 12, 150],
    [700, 48, 150],
  ])('gives umap-js’s neighbours and layout for %i texts of %i dimensions, %i epochs', (rows, dimensions, epochs) => {
    const data = vectors(rows, dimensions, rows * 31 + dimensions);
    const nNeighbors = Math.min(15, rows - 1);
    const theirs = new UMAP({ nComponents: 3, nNeighbors, minDist: 0.1, nEpochs: epochs, random: seeded(7), distanceFn: euclidean });
    const count = theirs.initializeFit(Array.from({ length: rows }, (_, i) => data.subarray(i * dimensions, (i + 1) * dimensions)) as unknown as number[][]);
    for (let epoch = 0; epoch < count; epoch++) theirs.step();
    const found = theirs as unknown as { knnIndices: number[][]; knnDistances: number[][] };

    const ours = new UmapFit(data, rows, dimensions, { nNeighbors, nEpochs: epochs, a: CURVE.a, b: CURVE.b, random: seeded(7) });
    for (let epoch = 0; epoch < ours.epochs; epoch++) ours.step();

    expect(ours.epochs).toBe(count);
    expect(ours.k).toBe(found.knnIndices[0]!.length);
    expect([...ours.knnIndices]).toEqual(found.knnIndices.flat());
    expect([...ours.knnDistances]).toEqual(found.knnDistances.flat());
    expect([...ours.embedding]).toEqual(theirs.getEmbedding().flat());
  });
});
