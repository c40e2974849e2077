/**
 * UMAP's transform, which places new texts into a fitted layout: nearly all of a large layout's time,
 * so written here on flat typed arrays rather than taken from umap-js, whose version builds sparse
 * matrices keyed by strings, arrays of arrays and heaps per batch (and whose neighbour search never
 * ran: its `heap.smallestFlagged` loop is written `i > length`). The steps are umap-js's (and the
 * reference implementation's):
 *
 * 1. Neighbours among the fitted texts: QUEUE random fitted texts to start from, then a walk of the
 *    fitted texts' neighbour graph, always from the nearest candidate not yet walked from, until every
 *    candidate kept has been; the NEIGHBOURS nearest are the text's neighbours.
 * 2. Their weights, UMAP's fuzzy memberships: exp(-d / σ), σ found by bisection so that they sum to
 *    log2(NEIGHBOURS) (local connectivity 0, as umap-js's transform uses).
 * 3. The start: the weighted mean of the neighbours' places.
 * 4. `epochs` epochs of UMAP's optimisation, attracting the text to its neighbours and pushing it away
 *    from randomly drawn fitted texts; the fitted texts do not move.
 *
 * The texts do not depend on one another, except through the batch's largest weight (below a share
 * of it an edge is not sampled) and the mean distance (σ's floor), as in umap-js, and through the one
 * random source the batch is placed with. A batch's work is the texts' alone: memory for a batch,
 * whatever the layout's size.
 */

/** What the transform needs of a fitted layout; built once per fit (`placeGraph`). */
export interface PlaceGraph {
  /** Fitted texts. */
  size: number;
  dimensions: number;
  /** The fitted texts' vectors, size × dimensions. */
  vectors: Float32Array;
  /** Their raw layout coordinates, size × 3. */
  embedding: Float64Array;
  /** The fitted texts' neighbour graph (each text's neighbours and the texts that have it as one), by rows. */
  starts: Int32Array;
  neighbours: Int32Array;
  /** UMAP's curve parameters for the layout's minimum distance. */
  a: number;
  b: number;
}

/** Neighbours of a placed text among the fitted ones. */
export const NEIGHBOURS = 15;
/** Candidates the neighbour search keeps (umap-js's transformQueueSize × NEIGHBOURS). */
export const QUEUE = 4 * NEIGHBOURS;
// UMAP's settings, umap-js's values, the same for the fit (umap.ts) and the transform.
export const NEGATIVE_SAMPLE_RATE = 5;
export const REPULSION = 1;
export const LEARNING_RATE = 1;
export const CLIP = 4;
/** How near the smoothed distances' sum must come to its target, and the bisection's steps at most. */
const SMOOTH_TOLERANCE = 1e-5;
const BISECTION_STEPS = 64;
/** σ's floor, as a share of the mean distance. */
export const MIN_DISTANCE_SCALE = 1e-3;

/**
 * bothWays lists each of `rows` rows' pairs: its neighbours in `indices` (`k` a row, the pair at
 * `at` = row × k + place) and the rows that have it as a neighbour, by rows (`starts`), in the order
 * met, a pair made both ways listed twice. `keep` leaves a pair out. The fit's fuzzy graph (umap.ts)
 * and the transform's search graph are both made from it.
 */
export function bothWays(rows: number, k: number, indices: Int32Array, keep: (at: number, i: number, j: number) => boolean): { starts: Int32Array; columns: Int32Array } {
  const degree = new Int32Array(rows + 1);
  for (let i = 0; i < rows; i++) {
    for (let at = i * k; at < (i + 1) * k; at++) {
      const j = indices[at]!;
      if (!keep(at, i, j)) continue;
      degree[i]!++;
      degree[j]!++;
    }
  }
  const starts = new Int32Array(rows + 1);
  for (let i = 0; i < rows; i++) starts[i + 1] = starts[i]! + degree[i]!;
  const filled = starts.slice(0, rows);
  const columns = new Int32Array(starts[rows]!);
  for (let i = 0; i < rows; i++) {
    for (let at = i * k; at < (i + 1) * k; at++) {
      const j = indices[at]!;
      if (!keep(at, i, j)) continue;
      columns[filled[i]!++] = j;
      columns[filled[j]!++] = i;
    }
  }
  return { starts, columns };
}

/**
 * placeGraph builds what the transform needs from the fitted texts' nearest neighbours (`k` per
 * text, by rows): their graph made symmetric (an edge either way, zero distances left out, as
 * umap-js's search graph), each row in ascending order, so a fit and a restore build the same one.
 */
export function placeGraph(
  vectors: Float32Array,
  dimensions: number,
  embedding: Float64Array,
  knnIndices: Int32Array,
  knnDistances: Float64Array,
  k: number,
  curve: { a: number; b: number },
): PlaceGraph {
  const size = embedding.length / 3;
  const { starts, columns: raw } = bothWays(size, k, knnIndices, (at, i, j) => j >= 0 && j !== i && knnDistances[at]! > 0);
  // Each row sorted, duplicates (an edge both ways) once.
  const compact = new Int32Array(size + 1);
  const neighbours = new Int32Array(raw.length);
  let out = 0;
  for (let i = 0; i < size; i++) {
    const row = raw.subarray(starts[i]!, starts[i + 1]!).sort();
    compact[i] = out;
    for (let at = 0; at < row.length; at++) if (at === 0 || row[at] !== row[at - 1]) neighbours[out++] = row[at]!;
  }
  compact[size] = out;
  return { size, dimensions, vectors, embedding, starts: compact, neighbours: neighbours.slice(0, out), a: curve.a, b: curve.b };
}

function squaredDistance(vectors: Float32Array, at: number, query: Float32Array, dimensions: number): number {
  let sum = 0;
  for (let d = 0; d < dimensions; d++) {
    const diff = vectors[at + d]! - query[d]!;
    sum += diff * diff;
  }
  return sum;
}

/**
 * squaredDistanceBelow is squaredDistance when that is below `bound`, and otherwise some value at or
 * above it: it stops adding once the sum reaches the bound (most candidates of the search are
 * farther than every one kept, and are left after a part of their dimensions).
 */
function squaredDistanceBelow(vectors: Float32Array, at: number, query: Float32Array, dimensions: number, bound: number): number {
  let sum = 0;
  let d = 0;
  while (d < dimensions) {
    const end = Math.min(dimensions, d + 8);
    for (; d < end; d++) {
      const diff = vectors[at + d]! - query[d]!;
      sum += diff * diff;
    }
    if (sum >= bound) return sum;
  }
  return sum;
}

/** x^y for x > 0: exp(y ln x), about twice as fast as Math.pow in V8. */
const power = (x: number, y: number) => Math.exp(y * Math.log(x));

/** clip keeps a gradient's component within ±CLIP. */
export const clip = (value: number) => (value > CLIP ? CLIP : value < -CLIP ? -CLIP : value);

/**
 * smoothSigma is umap-js's binary search for one row's σ: the scale at which the memberships of the
 * row's neighbours after the nearest (each exp(-(d - rho) / σ), and 1 at or below `rho`) sum to
 * `target`. The fit and the transform both weigh their neighbours with it.
 */
export function smoothSigma(distances: Float64Array, row: number, k: number, rho: number, target: number): number {
  let low = 0;
  let high = Infinity;
  let sigma = 1;
  for (let step = 0; step < BISECTION_STEPS; step++) {
    let sum = 0;
    // umap-js leaves out the nearest here (its loop starts at 1).
    for (let j = 1; j < k; j++) {
      const d = distances[row + j]! - rho;
      sum += d > 0 ? Math.exp(-(d / sigma)) : 1;
    }
    if (Math.abs(sum - target) < SMOOTH_TOLERANCE) break;
    if (sum > target) {
      high = sigma;
      sigma = (low + high) / 2;
    } else {
      low = sigma;
      sigma = high === Infinity ? sigma * 2 : (low + high) / 2;
    }
  }
  return sigma;
}

/**
 * transform places `queries` (vectors of the graph's dimensions) into the fitted layout and returns
 * their raw coordinates, queries.length × 3. Deterministic for the same graph, queries and random source.
 */
export function transform(graph: PlaceGraph, queries: readonly Float32Array[], random: () => number, epochs: number): Float64Array {
  const { size, dimensions, vectors, embedding, starts, neighbours, a, b } = graph;
  const count = queries.length;
  const k = Math.min(NEIGHBOURS, size);
  const queue = Math.min(QUEUE, size);
  const nearest = new Int32Array(count * k);
  const distances = new Float64Array(count * k);

  // 1. Neighbours: a max-heap of `queue` candidates by squared distance, walked from the nearest.
  const heapIndex = new Int32Array(queue);
  const heapDistance = new Float64Array(queue);
  const open = new Uint8Array(queue);
  const tried = new Uint32Array(size);
  const order = Array.from({ length: queue }, (_, i) => i);
  let mark = 0;
  const push = (distance: number, index: number) => {
    // Replace the farthest candidate and sift it down.
    let at = 0;
    for (;;) {
      const left = 2 * at + 1;
      if (left >= queue) break;
      const right = left + 1;
      const child = right < queue && heapDistance[right]! > heapDistance[left]! ? right : left;
      if (heapDistance[child]! <= distance) break;
      heapDistance[at] = heapDistance[child]!;
      heapIndex[at] = heapIndex[child]!;
      open[at] = open[child]!;
      at = child;
    }
    heapDistance[at] = distance;
    heapIndex[at] = index;
    open[at] = 1;
  };
  for (let q = 0; q < count; q++) {
    const query = queries[q]!;
    mark++;
    heapDistance.fill(Infinity);
    heapIndex.fill(-1);
    open.fill(0);
    for (let s = 0; s < queue; s++) {
      let index: number;
      do index = Math.floor(random() * size);
      while (tried[index] === mark);
      tried[index] = mark;
      push(squaredDistance(vectors, index * dimensions, query, dimensions), index);
    }
    for (;;) {
      let best = -1;
      let bestDistance = Infinity;
      for (let c = 0; c < queue; c++) {
        if (open[c] === 1 && heapDistance[c]! < bestDistance) {
          bestDistance = heapDistance[c]!;
          best = c;
        }
      }
      if (best === -1) break;
      open[best] = 0;
      const vertex = heapIndex[best]!;
      for (let at = starts[vertex]!; at < starts[vertex + 1]!; at++) {
        const candidate = neighbours[at]!;
        if (tried[candidate] === mark) continue;
        tried[candidate] = mark;
        const distance = squaredDistanceBelow(vectors, candidate * dimensions, query, dimensions, heapDistance[0]!);
        if (distance < heapDistance[0]!) push(distance, candidate);
      }
    }
    order.sort((x, y) => heapDistance[x]! - heapDistance[y]! || heapIndex[x]! - heapIndex[y]!);
    for (let j = 0; j < k; j++) {
      nearest[q * k + j] = heapIndex[order[j]!]!;
      distances[q * k + j] = Math.sqrt(heapDistance[order[j]!]!);
    }
  }

  // 2. Weights. σ's floor is a share of the batch's mean distance, as in umap-js.
  let meanDistance = 0;
  for (let i = 0; i < distances.length; i++) meanDistance += distances[i]!;
  meanDistance /= Math.max(1, distances.length);
  const target = Math.log2(k);
  const weights = new Float64Array(count * k);
  let largest = 0;
  for (let q = 0; q < count; q++) {
    const row = q * k;
    const sigma = Math.max(smoothSigma(distances, row, k, 0, target), MIN_DISTANCE_SCALE * meanDistance);
    for (let j = 0; j < k; j++) {
      const d = distances[row + j]!;
      const weight = d <= 0 ? 1 : Math.exp(-d / sigma);
      weights[row + j] = weight;
      if (weight > largest) largest = weight;
    }
  }

  const out = new Float64Array(count * 3);
  // Per edge of a text: epochs between samples, and the epochs of its next sample and next negative samples.
  const perSample = new Float64Array(k);
  const nextSample = new Float64Array(k);
  const perNegative = new Float64Array(k);
  const nextNegative = new Float64Array(k);
  for (let q = 0; q < count; q++) {
    const row = q * k;
    // 3. The start: the weighted mean of the neighbours' places.
    let total = 0;
    for (let j = 0; j < k; j++) total += weights[row + j]!;
    let x = 0;
    let y = 0;
    let z = 0;
    for (let j = 0; j < k; j++) {
      const share = total > 0 ? weights[row + j]! / total : 1 / k;
      const at = nearest[row + j]! * 3;
      x += share * embedding[at]!;
      y += share * embedding[at + 1]!;
      z += share * embedding[at + 2]!;
    }
    // 4. The optimisation. Edges lighter than largest / epochs are not sampled (as in umap-js).
    for (let j = 0; j < k; j++) {
      const weight = weights[row + j]!;
      perSample[j] = weight >= largest / epochs && weight > 0 ? largest / weight : -1;
      nextSample[j] = perSample[j]!;
      perNegative[j] = perSample[j]! / NEGATIVE_SAMPLE_RATE;
      nextNegative[j] = perNegative[j]!;
    }
    for (let epoch = 0; epoch < epochs; epoch++) {
      const alpha = LEARNING_RATE * (1 - Math.max(0, epoch - 1) / epochs);
      for (let j = 0; j < k; j++) {
        if (perSample[j]! < 0 || nextSample[j]! > epoch) continue;
        const at = nearest[row + j]! * 3;
        let dx = x - embedding[at]!;
        let dy = y - embedding[at + 1]!;
        let dz = z - embedding[at + 2]!;
        let squared = dx * dx + dy * dy + dz * dz;
        if (squared > 0) {
          const powered = power(squared, b);
          const coefficient = (-2 * a * b * (powered / squared)) / (a * powered + 1);
          x += clip(coefficient * dx) * alpha;
          y += clip(coefficient * dy) * alpha;
          z += clip(coefficient * dz) * alpha;
        }
        nextSample[j]! += perSample[j]!;
        const negatives = Math.floor((epoch - nextNegative[j]!) / perNegative[j]!);
        for (let n = 0; n < negatives; n++) {
          const other = Math.floor(random() * size) * 3;
          dx = x - embedding[other]!;
          dy = y - embedding[other + 1]!;
          dz = z - embedding[other + 2]!;
          squared = dx * dx + dy * dy + dz * dz;
          if (squared > 0) {
            const coefficient = (2 * REPULSION * b) / ((0.001 + squared) * (a * power(squared, b) + 1));
            x += clip(coefficient * dx) * alpha;
            y += clip(coefficient * dy) * alpha;
            z += clip(coefficient * dz) * alpha;
          } else {
            // On top of a fitted text: pushed away by a fixed step, as UMAP does.
            x += CLIP * alpha;
            y += CLIP * alpha;
            z += CLIP * alpha;
          }
        }
        nextNegative[j]! += Math.max(0, negatives) * perNegative[j]!;
      }
    }
    out[q * 3] = x;
    out[q * 3 + 1] = y;
    out[q * 3 + 2] = z;
  }
  return out;
}
