/**
 * A repair to umap-js 1.4.0, applied on import. Its transform finds each new point's neighbours among
 * the fitted points by walking the neighbour graph from a few starting points, taking the closest
 * unvisited candidate each time (`heap.smallestFlagged`). That function's loop is written
 * `for (i = 0; i > length; i++)` and never runs, so the walk never starts and the neighbours are the
 * random starting points (on the cat/weather/train families, under 20% of the true neighbours). This
 * replaces it with the intended loop; `nn_descent.js` looks the function up on the module at each call.
 */
import { createRequire } from 'node:module';

type Heap = [number[][], number[][], number[][]];

const require = createRequire(import.meta.url);
const heap = require('umap-js/dist/heap.js') as { smallestFlagged: (heap: Heap, row: number) => number };

heap.smallestFlagged = function smallestFlagged(heap: Heap, row: number): number {
  const indices = heap[0][row]!;
  const distances = heap[1][row]!;
  const flags = heap[2][row]!;
  let best = -1;
  let bestDistance = Infinity;
  for (let i = 0; i < indices.length; i++) {
    if (flags[i] === 1 && distances[i]! < bestDistance) {
      bestDistance = distances[i]!;
      best = i;
    }
  }
  if (best === -1) return -1;
  flags[best] = 0;
  return Math.floor(indices[best]!);
};

/**
 * umap-js's transform rebuilds the compressed rows of the fitted sample's search graph for every
 * batch (tens of milliseconds for 5,000 texts); the graph does not change after the fit, so a layout
 * builds them once (`keepCompressedRows`) and the transform finds them here.
 */
const matrix = require('umap-js/dist/matrix.js') as { getCSR: (m: object) => unknown };
const buildCompressedRows = matrix.getCSR;
const compressedRows = new WeakMap<object, unknown>();
matrix.getCSR = (m: object) => compressedRows.get(m) ?? buildCompressedRows(m);

/** keepCompressedRows builds the compressed rows of a matrix that no longer changes, once. */
export function keepCompressedRows(m: object): void {
  compressedRows.set(m, buildCompressedRows(m));
}

/**
 * searchWith is umap-js's transform neighbour search (`makeInitializedNNSearch`) visiting the same
 * vertices in the same order, hence finding the same neighbours, with the visited fitted points
 * marked in an array rather than a Set per text: the search is half of a transform's time.
 */
export function searchWith(distance: (a: ArrayLike<number>, b: ArrayLike<number>) => number) {
  const heapModule = heap as unknown as { smallestFlagged: (h: Heap, row: number) => number; uncheckedHeapPush: (h: Heap, row: number, weight: number, index: number, flag: number) => number };
  let tried = new Uint32Array(0);
  let mark = 0;
  return function search(data: ArrayLike<number>[], graph: object, initialization: Heap, queryPoints: ArrayLike<number>[]): Heap {
    const { indices, indptr } = matrix.getCSR(graph) as { indices: number[]; indptr: number[] };
    if (tried.length < data.length) tried = new Uint32Array(data.length);
    for (let i = 0; i < queryPoints.length; i++) {
      if (++mark === 0xffffffff) {
        tried.fill(0);
        mark = 1;
      }
      for (const index of initialization[0][i]!) if (index >= 0) tried[index] = mark;
      const query = queryPoints[i]!;
      for (;;) {
        const vertex = heapModule.smallestFlagged(initialization, i);
        if (vertex === -1) break;
        for (let at = indptr[vertex]!; at < indptr[vertex + 1]!; at++) {
          const candidate = indices[at]!;
          if (candidate === vertex || candidate === -1 || tried[candidate] === mark) continue;
          heapModule.uncheckedHeapPush(initialization, i, distance(data[candidate]!, query), candidate, 1);
          tried[candidate] = mark;
        }
      }
    }
    return initialization;
  };
}
