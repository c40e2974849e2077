/**
 * UMAP's fit on flat typed arrays: umap-js 1.4.0's (`UMAP.initializeFit` and `step`), step for step,
 * with the same random draws in the same order and the same floating-point operations, so that it
 * gives umap-js's layout bit for bit (a test compares them). umap-js keeps its data as arrays of
 * arrays and its graphs as sparse matrices keyed by "row:col" strings, copied several times over
 * (the membership graph, its transpose, their sum, product and difference, and a search graph that
 * only its own transform reads): for a 5,000-text sample about 120 MB of heap at its peak,
 * and some 40 MB held through the whole optimisation. Here the same data takes a few MB:
 *
 * 1. Nearest neighbours: random projection trees (only their leaves are kept, one tree at a time),
 *    then nearest-neighbour descent, its heaps `rows × size` typed arrays.
 * 2. The fuzzy graph: smoothed distances, memberships, their fuzzy union (a + b - ab) as one list of
 *    edges sorted by row and column, edges below max / epochs dropped.
 * 3. The optimisation, one epoch per `step`, on a flat `rows × 3` embedding.
 */
import { bothWays, clip, LEARNING_RATE, MIN_DISTANCE_SCALE, NEGATIVE_SAMPLE_RATE, REPULSION, smoothSigma } from './transform.ts';

/** What the fit is given besides the data (the layout's settings; see layout.ts). */
export interface UmapSettings {
  nNeighbors: number;
  nEpochs: number;
  /** UMAP's curve parameters for the minimum distance. */
  a: number;
  b: number;
  random: () => number;
}

const COMPONENTS = 3;
const MAX_CANDIDATES = 50;
const DESCENT_DELTA = 0.001;
const DESCENT_RHO = 0.5;

/** Rows of `size` (index, weight, flag) kept as max-heaps by weight: umap-js's heaps, flat. */
class Heaps {
  readonly indices: Int32Array;
  readonly weights: Float64Array;
  readonly flags: Uint8Array;

  constructor(
    readonly rows: number,
    readonly size: number,
  ) {
    this.indices = new Int32Array(rows * size).fill(-1);
    this.weights = new Float64Array(rows * size).fill(Infinity);
    this.flags = new Uint8Array(rows * size);
  }

  /** push adds (index, weight) to a row unless it is there already or no nearer than the farthest kept: 1 if added. */
  push(row: number, weight: number, index: number, flag: number): number {
    const base = row * this.size;
    if (weight >= this.weights[base]!) return 0;
    for (let i = base; i < base + this.size; i++) if (index === this.indices[i]) return 0;
    return this.pushUnchecked(base, weight, index, flag);
  }

  private pushUnchecked(base: number, weight: number, index: number, flag: number): number {
    const { indices, weights, flags, size } = this;
    if (weight >= weights[base]!) return 0;
    weights[base] = weight;
    indices[base] = index;
    flags[base] = flag;
    let i = 0;
    for (;;) {
      const c1 = 2 * i + 1;
      const c2 = c1 + 1;
      let swap: number;
      if (c1 >= size) break;
      else if (c2 >= size) {
        if (weights[base + c1]! > weight) swap = c1;
        else break;
      } else if (weights[base + c1]! >= weights[base + c2]!) {
        if (weight < weights[base + c1]!) swap = c1;
        else break;
      } else {
        if (weight < weights[base + c2]!) swap = c2;
        else break;
      }
      weights[base + i] = weights[base + swap]!;
      indices[base + i] = indices[base + swap]!;
      flags[base + i] = flags[base + swap]!;
      i = swap;
    }
    weights[base + i] = weight;
    indices[base + i] = index;
    flags[base + i] = flag;
    return 1;
  }

  /** sort turns every row into ascending order of weight (umap-js's deheapSort). */
  sort(): void {
    const { indices, weights, size } = this;
    for (let row = 0; row < this.rows; row++) {
      const base = row * size;
      for (let j = 0; j < size - 1; j++) {
        const last = size - j - 1;
        const index = indices[base]!;
        indices[base] = indices[base + last]!;
        indices[base + last] = index;
        const weight = weights[base]!;
        weights[base] = weights[base + last]!;
        weights[base + last] = weight;
        // Sift down within [0, last).
        let element = 0;
        while (element * 2 + 1 < last) {
          const left = element * 2 + 1;
          const right = left + 1;
          let swap = element;
          if (weights[base + swap]! < weights[base + left]!) swap = left;
          if (right < last && weights[base + swap]! < weights[base + right]!) swap = right;
          if (swap === element) break;
          const w = weights[base + element]!;
          weights[base + element] = weights[base + swap]!;
          weights[base + swap] = w;
          const x = indices[base + element]!;
          indices[base + element] = indices[base + swap]!;
          indices[base + swap] = x;
          element = swap;
        }
      }
    }
  }
}

const randomInt = (n: number, random: () => number) => Math.floor(random() * n);

/** `count` distinct integers below `pool` (umap-js's rejectionSample). */
function rejectionSample(count: number, pool: number, random: () => number): Int32Array {
  const result = new Int32Array(count);
  for (let i = 0; i < count; i++) {
    let j: number;
    for (;;) {
      j = randomInt(pool, random);
      let taken = false;
      for (let k = 0; k < i; k++) {
        if (j === result[k]) {
          taken = true;
          break;
        }
      }
      if (!taken) break;
    }
    result[i] = j;
  }
  return result;
}

/** The texts' vectors, `rows × dimensions`, and the distance between two of them (Euclidean). */
class Points {
  constructor(
    readonly data: Float32Array,
    readonly rows: number,
    readonly dimensions: number,
  ) {}

  distance(i: number, j: number): number {
    const { data, dimensions } = this;
    const a = i * dimensions;
    const b = j * dimensions;
    let sum = 0;
    for (let d = 0; d < dimensions; d++) {
      const diff = data[a + d]! - data[b + d]!;
      sum += diff * diff;
    }
    return Math.sqrt(sum);
  }
}

/**
 * treeLeaves builds one random projection tree (umap-js's makeEuclideanTree) and returns its leaves,
 * left first, each `leafSize` indices padded with -1.
 */
function treeLeaves(points: Points, leafSize: number, random: () => number): Int32Array[] {
  const leaves: Int32Array[] = [];
  const { data, dimensions } = points;
  const hyperplane = new Float64Array(dimensions);
  const split = (indices: Int32Array): void => {
    if (indices.length <= leafSize) {
      const leaf = new Int32Array(leafSize).fill(-1);
      leaf.set(indices);
      leaves.push(leaf);
      return;
    }
    const leftIndex = randomInt(indices.length, random);
    let rightIndex = randomInt(indices.length, random);
    rightIndex += leftIndex === rightIndex ? 1 : 0;
    rightIndex = rightIndex % indices.length;
    const left = indices[leftIndex]! * dimensions;
    const right = indices[rightIndex]! * dimensions;
    let offset = 0;
    for (let d = 0; d < dimensions; d++) {
      hyperplane[d] = data[left + d]! - data[right + d]!;
      offset -= (hyperplane[d]! * (data[left + d]! + data[right + d]!)) / 2.0;
    }
    const side = new Uint8Array(indices.length);
    let leftCount = 0;
    for (let i = 0; i < indices.length; i++) {
      const at = indices[i]! * dimensions;
      let margin = offset;
      for (let d = 0; d < dimensions; d++) margin += hyperplane[d]! * data[at + d]!;
      if (margin === 0) side[i] = randomInt(2, random);
      else side[i] = margin > 0 ? 0 : 1;
      if (side[i] === 0) leftCount++;
    }
    const lefts = new Int32Array(leftCount);
    const rights = new Int32Array(indices.length - leftCount);
    let l = 0;
    let r = 0;
    for (let i = 0; i < indices.length; i++) {
      if (side[i] === 0) lefts[l++] = indices[i]!;
      else rights[r++] = indices[i]!;
    }
    split(lefts);
    split(rights);
  };
  split(Int32Array.from({ length: points.rows }, (_, i) => i));
  return leaves;
}

/** nearestNeighbors is umap-js's: a forest of random projection trees, then nearest-neighbour descent. */
function nearestNeighbors(points: Points, k: number, random: () => number): Heaps {
  const n = points.rows;
  const round = (x: number) => (x === 0.5 ? 0 : Math.round(x));
  const trees = 5 + Math.floor(round(Math.pow(n, 0.5) / 20.0));
  const iterations = Math.max(5, Math.floor(Math.round(Math.log(n) / Math.log(2))));
  const leafSize = Math.max(10, k);
  const leaves: Int32Array[] = [];
  for (let t = 0; t < trees; t++) for (const leaf of treeLeaves(points, leafSize, random)) leaves.push(leaf);

  const graph = new Heaps(n, k);
  for (let i = 0; i < n; i++) {
    const sampled = rejectionSample(k, n, random);
    for (let j = 0; j < sampled.length; j++) {
      const d = points.distance(i, sampled[j]!);
      graph.push(i, d, sampled[j]!, 1);
      graph.push(sampled[j]!, d, i, 1);
    }
  }
  for (const leaf of leaves) {
    for (let i = 0; i < leaf.length; i++) {
      if (leaf[i]! < 0) break;
      for (let j = i + 1; j < leaf.length; j++) {
        if (leaf[j]! < 0) break;
        const d = points.distance(leaf[i]!, leaf[j]!);
        graph.push(leaf[i]!, d, leaf[j]!, 1);
        graph.push(leaf[j]!, d, leaf[i]!, 1);
      }
    }
  }
  leaves.length = 0;

  for (let iteration = 0; iteration < iterations; iteration++) {
    // The candidates: each row's neighbours and the rows that have it as one, drawn by random weights.
    const candidates = new Heaps(n, MAX_CANDIDATES);
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < k; j++) {
        const at = i * k + j;
        if (graph.indices[at]! < 0) continue;
        const index = graph.indices[at]!;
        const isNew = graph.flags[at]!;
        const d = random();
        candidates.push(i, d, index, isNew);
        candidates.push(index, d, i, isNew);
        graph.flags[at] = 0;
      }
    }
    let changes = 0;
    for (let i = 0; i < n; i++) {
      const base = i * MAX_CANDIDATES;
      for (let j = 0; j < MAX_CANDIDATES; j++) {
        const p = candidates.indices[base + j]!;
        if (p < 0 || random() < DESCENT_RHO) continue;
        for (let c = 0; c < MAX_CANDIDATES; c++) {
          const q = candidates.indices[base + c]!;
          if (q < 0 || (!candidates.flags[base + j] && !candidates.flags[base + c])) continue;
          const d = points.distance(p, q);
          changes += graph.push(p, d, q, 1);
          changes += graph.push(q, d, p, 1);
        }
      }
    }
    if (changes <= DESCENT_DELTA * k * n) break;
  }
  graph.sort();
  return graph;
}

/** The mean of a row as umap-js computes it (a left-to-right sum from the first value). */
function mean(values: Float64Array, start: number, count: number): number {
  let sum = values[start]!;
  for (let i = start + 1; i < start + count; i++) sum += values[i]!;
  return sum / count;
}

/** memberships gives each row's fuzzy memberships of its neighbours (umap-js's smoothKNNDistance and computeMembershipStrengths, local connectivity 1). */
function memberships(knn: Heaps): Float64Array {
  const { rows, size: k, indices, weights: distances } = knn;
  const target = (Math.log(k) / Math.log(2)) * 1.0;
  const out = new Float64Array(rows * k);
  let meanOfMeans: number | null = null;
  for (let i = 0; i < rows; i++) {
    const base = i * k;
    let rho = 0;
    for (let j = 0; j < k; j++) {
      if (distances[base + j]! > 0.0) {
        rho = distances[base + j]!;
        break;
      }
    }
    let sigma = smoothSigma(distances, base, k, rho, target);
    if (rho > 0.0) {
      const rowMean = mean(distances, base, k);
      if (sigma < MIN_DISTANCE_SCALE * rowMean) sigma = MIN_DISTANCE_SCALE * rowMean;
    } else {
      if (meanOfMeans === null) {
        const means = new Float64Array(rows);
        for (let r = 0; r < rows; r++) means[r] = mean(distances, r * k, k);
        meanOfMeans = mean(means, 0, rows);
      }
      if (sigma < MIN_DISTANCE_SCALE * meanOfMeans) sigma = MIN_DISTANCE_SCALE * meanOfMeans;
    }
    for (let j = 0; j < k; j++) {
      const index = indices[base + j]!;
      if (index === -1) continue;
      if (index === i) out[base + j] = 0.0;
      else if (distances[base + j]! - rho <= 0.0) out[base + j] = 1.0;
      else out[base + j] = Math.exp(-((distances[base + j]! - rho) / sigma));
    }
  }
  return out;
}

/** The optimisation's edges, sorted by row (tail) and column (head). */
interface Edges {
  head: Int32Array;
  tail: Int32Array;
  epochsPerSample: Float64Array;
}

/**
 * fuzzyEdges is the fuzzy union of the membership graph and its transpose, a + b - ab for every pair
 * that either has, by rows and ascending columns, less the pairs below max / epochs and the zeros
 * (umap-js's fuzzySimplicialSet and initializeSimplicialSetEmbedding).
 */
function fuzzyEdges(knn: Heaps, member: Float64Array, epochs: number): Edges {
  const { rows, size: k, indices } = knn;
  // Each row's pairs: its own neighbours and the rows that have it as one.
  const { starts, columns } = bothWays(rows, k, indices, (_at, _i, j) => j !== -1);
  /** The membership of (row, column), 0 when the row does not have the column as a neighbour. */
  const membership = (row: number, column: number): number => {
    for (let j = 0; j < k; j++) if (indices[row * k + j] === column) return member[row * k + j]!;
    return 0;
  };
  // The union's values, each row's columns ascending and once.
  const values = new Float64Array(columns.length);
  const kept = new Uint8Array(columns.length);
  let max = 0;
  for (let i = 0; i < rows; i++) {
    const row = columns.subarray(starts[i]!, starts[i + 1]!).sort();
    for (let at = 0; at < row.length; at++) {
      if (at > 0 && row[at] === row[at - 1]) continue;
      const x = membership(i, row[at]!);
      const y = membership(row[at]!, i);
      const value = x + y - x * y;
      values[starts[i]! + at] = value;
      kept[starts[i]! + at] = 1;
      if (max < value) max = value;
    }
  }
  let count = 0;
  for (let at = 0; at < values.length; at++) {
    if (kept[at] === 1 && values[at]! < max / epochs) values[at] = 0;
    if (kept[at] === 1 && values[at]) count++;
  }
  const head = new Int32Array(count);
  const tail = new Int32Array(count);
  const weights = new Float64Array(count);
  let edge = 0;
  for (let i = 0; i < rows; i++) {
    for (let at = starts[i]!; at < starts[i + 1]!; at++) {
      if (kept[at] !== 1 || !values[at]) continue;
      weights[edge] = values[at]!;
      tail[edge] = i;
      head[edge++] = columns[at]!;
    }
  }
  // umap-js's makeEpochsPerSample.
  let largest = 0;
  for (let i = 0; i < count; i++) largest = weights[i]! > largest ? weights[i]! : largest;
  const epochsPerSample = new Float64Array(count).fill(-1.0);
  for (let i = 0; i < count; i++) {
    const samples = (weights[i]! / largest) * epochs;
    if (samples > 0) epochsPerSample[i] = epochs / samples;
  }
  return { head, tail, epochsPerSample };
}

/** A UMAP fit in progress: `initialize`, then `step` once per epoch; `embedding` is the layout so far. */
export class UmapFit {
  /** The raw layout, rows × 3. */
  readonly embedding: Float64Array;
  /** Each row's nearest neighbours (itself among them, as umap-js finds them), rows × k, ascending distance. */
  readonly knnIndices: Int32Array;
  readonly knnDistances: Float64Array;
  readonly k: number;
  private readonly head: Int32Array;
  private readonly tail: Int32Array;
  private readonly epochsPerSample: Float64Array;
  private readonly epochsPerNegativeSample: Float64Array;
  private readonly epochOfNextSample: Float64Array;
  private readonly epochOfNextNegativeSample: Float64Array;
  private epoch = 0;
  private alpha = LEARNING_RATE;

  /** `data` holds `rows` vectors of `dimensions`; more rows than settings.nNeighbors. */
  constructor(
    data: Float32Array,
    readonly rows: number,
    dimensions: number,
    private readonly settings: UmapSettings,
  ) {
    if (rows <= settings.nNeighbors) throw new Error(`UMAP needs more than ${settings.nNeighbors} texts; it was given ${rows}.`);
    const { random, nEpochs } = settings;
    const knn = nearestNeighbors(new Points(data, rows, dimensions), settings.nNeighbors, random);
    this.knnIndices = knn.indices;
    this.knnDistances = knn.weights;
    this.k = knn.size;
    const edges = fuzzyEdges(knn, memberships(knn), nEpochs);
    // The start: uniform in [-10, 10) on every axis, drawn after the neighbour search (as umap-js).
    this.embedding = new Float64Array(rows * COMPONENTS);
    for (let i = 0; i < this.embedding.length; i++) this.embedding[i] = random() * 20 + -10;
    this.head = edges.head;
    this.tail = edges.tail;
    this.epochsPerSample = edges.epochsPerSample;
    this.epochsPerNegativeSample = this.epochsPerSample.map((e) => e / NEGATIVE_SAMPLE_RATE);
    this.epochOfNextNegativeSample = this.epochsPerNegativeSample.slice();
    this.epochOfNextSample = this.epochsPerSample.slice();
  }

  /** Epochs of the optimisation. */
  get epochs(): number {
    return this.settings.nEpochs;
  }

  /** step runs the next epoch of the optimisation (nothing once all have run). */
  step(): void {
    const n = this.epoch;
    const { nEpochs, a, b, random } = this.settings;
    if (n >= nEpochs) return;
    const { head, tail, embedding, epochsPerSample, epochOfNextSample, epochOfNextNegativeSample, epochsPerNegativeSample, rows } = this;
    const alpha = this.alpha;
    const gamma = REPULSION;
    for (let i = 0; i < epochsPerSample.length; i++) {
      if (epochOfNextSample[i]! > n) continue;
      const j = head[i]!;
      const current = j * COMPONENTS;
      const other = tail[i]! * COMPONENTS;
      let distSquared = 0.0;
      for (let d = 0; d < COMPONENTS; d++) distSquared += Math.pow(embedding[current + d]! - embedding[other + d]!, 2);
      let gradCoeff = 0;
      if (distSquared > 0) {
        gradCoeff = -2.0 * a * b * Math.pow(distSquared, b - 1.0);
        gradCoeff /= a * Math.pow(distSquared, b) + 1.0;
      }
      for (let d = 0; d < COMPONENTS; d++) {
        const gradD = clip(gradCoeff * (embedding[current + d]! - embedding[other + d]!));
        embedding[current + d]! += gradD * alpha;
        embedding[other + d]! += -gradD * alpha;
      }
      epochOfNextSample[i]! += epochsPerSample[i]!;
      const negatives = Math.floor((n - epochOfNextNegativeSample[i]!) / epochsPerNegativeSample[i]!);
      for (let p = 0; p < negatives; p++) {
        const k = randomInt(rows, random);
        const sample = k * COMPONENTS;
        let squared = 0.0;
        for (let d = 0; d < COMPONENTS; d++) squared += Math.pow(embedding[current + d]! - embedding[sample + d]!, 2);
        let coefficient = 0.0;
        if (squared > 0.0) {
          coefficient = 2.0 * gamma * b;
          coefficient /= (0.001 + squared) * (a * Math.pow(squared, b) + 1);
        } else if (j === k) {
          continue;
        }
        for (let d = 0; d < COMPONENTS; d++) {
          let gradD = 4.0;
          if (coefficient > 0.0) gradD = clip(coefficient * (embedding[current + d]! - embedding[sample + d]!));
          embedding[current + d]! += gradD * alpha;
        }
      }
      epochOfNextNegativeSample[i]! += negatives * epochsPerNegativeSample[i]!;
    }
    this.alpha = LEARNING_RATE * (1.0 - n / nEpochs);
    this.epoch++;
  }
}
