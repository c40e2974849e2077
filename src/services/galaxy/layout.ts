/**
 * The galaxy's layout: a seeded 3D UMAP of the text vectors (`text-space.ts`), fitted on
 * at most FIT_SAMPLE texts; every other text, and every text added later, is placed by UMAP's
 * transform into the fitted layout. Coordinates are then framed for the viewers: centred on zero and
 * scaled per axis so that the central 98% of the fitted points span 2 × HALF_SPAN = 16 units, with
 * outliers drawn in softly to at most ±LIMIT (so every axis spans at most 20 units).
 *
 * The fit is umap-js's algorithm on typed arrays (`umap.ts`: the same layout as umap-js's, bit for
 * bit); the transform is `transform.ts`'s, on the fitted sample's vectors, neighbour graph and raw
 * coordinates. The model (text space, the fitted sample's vectors, nearest neighbours
 * and raw coordinates, the frame) is stored with the layout, so any process can place new texts into
 * it later: `restore` rebuilds the sample's neighbour graph from the stored neighbours.
 */
import { createRequire } from 'node:module';
import { gunzipSync, gzipSync } from 'node:zlib';
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import { placeGraph, transform, type PlaceGraph } from './transform.ts';
import { DocumentFrequencies } from './features.ts';
import { fitTextSpace, TextSpace } from './text-space.ts';
import { MODEL_VERSION } from './model-version.ts';
import { UmapFit } from './umap.ts';

/** The layout is fitted on at most this many texts (chosen by uuid hash); the rest are transformed. */
export const FIT_SAMPLE = 5000;
/** Fewer texts than this are laid out on a fixed ring: UMAP needs a neighbourhood to work with. */
export const MIN_UMAP_TEXTS = 6;
const NEIGHBOURS = 15;
const MIN_DIST = 0.1;
/** Texts transformed at once; bounds the memory of a transform. */
const TRANSFORM_BATCH = 2000;
/**
 * Epochs of the transform's optimisation, which places every text beyond the sample: umap-js would
 * run a third of the fit's count (50); the families place as well with 30, and the benchmark
 * corpus's 40 topics nearly as well.
 */
const TRANSFORM_EPOCHS = 30;
/** Epochs of the optimisation between two pauses. */
const EPOCHS_PER_PAUSE = 10;
export const HALF_SPAN = 8;
export const LIMIT = 10;

/** Something to await now and then during long work: yields to the event loop (and lets other work in). */
export type Pause = () => Promise<void>;

export const yieldToEvents: Pause = () => new Promise((resolve) => setImmediate(resolve));

/** Epochs of the fit. */
function epochsFor(texts: number): number {
  return texts <= 2500 ? 300 : 150;
}

/** Per axis: framed = (raw - centre) × scale, then drawn in softly beyond HALF_SPAN. */
export interface Frame {
  centre: [number, number, number];
  scale: [number, number, number];
}

function quantile(sorted: Float64Array, q: number): number {
  const at = (sorted.length - 1) * q;
  const low = Math.floor(at);
  const high = Math.min(sorted.length - 1, low + 1);
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (at - low);
}

/** frameFor centres the central 98% of the points on each axis and scales it to ±HALF_SPAN. */
function frameFor(raw: Float64Array, count: number): Frame {
  const frame: Frame = { centre: [0, 0, 0], scale: [1, 1, 1] };
  for (let axis = 0; axis < 3; axis++) {
    const values = new Float64Array(count);
    for (let i = 0; i < count; i++) values[i] = raw[i * 3 + axis]!;
    values.sort();
    const low = quantile(values, 0.01);
    const high = quantile(values, 0.99);
    frame.centre[axis] = (low + high) / 2;
    frame.scale[axis] = high - low > 1e-9 ? (2 * HALF_SPAN) / (high - low) : 1;
  }
  return frame;
}

function soften(value: number): number {
  const size = Math.abs(value);
  if (!Number.isFinite(value)) return 0;
  if (size <= HALF_SPAN) return value;
  return Math.sign(value) * (HALF_SPAN + (LIMIT - HALF_SPAN) * Math.tanh((size - HALF_SPAN) / (LIMIT - HALF_SPAN)));
}

function applyFrame(frame: Frame, raw: ArrayLike<number>, count: number, out = new Float32Array(count * 3), offset = 0): Float32Array {
  for (let i = 0; i < count; i++) {
    for (let axis = 0; axis < 3; axis++) {
      out[(offset + i) * 3 + axis] = soften((raw[i * 3 + axis]! - frame.centre[axis]!) * frame.scale[axis]!);
    }
  }
  return out;
}

/** ringLayout places a handful of texts evenly on a circle (too few for UMAP). */
function ringLayout(count: number): Float64Array {
  const raw = new Float64Array(count * 3);
  for (let i = 0; i < count; i++) {
    const angle = (2 * Math.PI * i) / Math.max(count, 1);
    raw[i * 3] = count === 1 ? 0 : HALF_SPAN * Math.cos(angle);
    raw[i * 3 + 1] = count === 1 ? 0 : HALF_SPAN * Math.sin(angle);
  }
  return raw;
}

/**
 * pointSize is a star's size: 0.1 + 0.5 × ln(1 + length) / ln(2001), where length is the text's
 * length in characters (at most 2,000). A one-word entry gets about 0.22, a tweet-sized one about 0.47,
 * the longest allowed 0.6.
 */
export function pointSize(text: string): number {
  let length = 0;
  for (const _ of text) if (++length >= 2000) break;
  return Math.round((0.1 + (0.5 * Math.log1p(length)) / Math.log(2001)) * 1000) / 1000;
}

const require = createRequire(import.meta.url);
const { findABParams } = require('umap-js/dist/umap.js') as { findABParams: (spread: number, minDist: number) => { a: number; b: number } };
/** UMAP's curve for the layout's minimum distance, fitted by umap-js's own code (the fit and the transform use it). */
const CURVE = findABParams(1, MIN_DIST);

/**
 * batchRandom is the random source of one transform batch, seeded by the layout's seed and the
 * batch's texts: where a text lands depends on its batch alone, not on the batches placed before it
 * nor on the thread that places it, so a layout placed on several threads is the same as on one.
 */
function batchRandom(seed: number, texts: readonly string[]): () => number {
  let hash = 0x811c9dc5 ^ seed;
  for (const text of texts) {
    for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
    hash = Math.imul(hash ^ 0x1f, 0x01000193);
  }
  const rng = xoroshiro128plus(hash | 0);
  return () => uniformFloat64(rng);
}

/**
 * The fitted sample's nearest neighbours, as the fit found them, `k` a text, by rows. Stored with the
 * model, they spare a restore the neighbour search, and give the transform its graph.
 */
interface Neighbours {
  indices: Int32Array;
  distances: Float64Array;
  k: number;
}

export class LayoutModel {
  private constructor(
    readonly space: TextSpace,
    /** Null for a ring layout: it cannot place new texts (any change refits it). */
    private readonly graph: PlaceGraph | null,
    /** The fitted texts' vectors, sampleSize × dimensions. */
    private readonly sampleVectors: Float32Array,
    /** The fitted texts' raw UMAP coordinates, sampleSize × 3. */
    private readonly sampleRaw: Float64Array,
    private readonly neighbours: Neighbours | null,
    readonly frame: Frame,
    readonly seed: number,
  ) {}

  get sampleSize(): number {
    return this.sampleRaw.length / 3;
  }

  /** canPlace tells whether texts can be added by transform (false for a ring of a few texts). */
  get canPlace(): boolean {
    return this.graph !== null;
  }

  /**
   * fit lays out `texts` (the sample: at most FIT_SAMPLE of them) and returns the model with the
   * framed coordinates of those texts, in order. Deterministic for the same texts, order and seed.
   */
  static async fit(texts: readonly string[], seed: number, pause: Pause = yieldToEvents): Promise<{ model: LayoutModel; points: Float32Array }> {
    const space = fitTextSpace(texts, seed);
    await pause();
    const { dimensions } = space;
    const flat = new Float32Array(texts.length * dimensions);
    texts.forEach((text, i) => space.embed(text, flat.subarray(i * dimensions, (i + 1) * dimensions)));
    let raw: Float64Array;
    let neighbours: Neighbours | null = null;
    if (texts.length < MIN_UMAP_TEXTS) {
      raw = ringLayout(texts.length);
    } else {
      const rng = xoroshiro128plus(seed);
      const umap = new UmapFit(flat, texts.length, dimensions, {
        nNeighbors: Math.min(NEIGHBOURS, texts.length - 1),
        nEpochs: epochsFor(texts.length),
        a: CURVE.a,
        b: CURVE.b,
        random: () => uniformFloat64(rng),
      });
      await pause();
      for (let epoch = 0; epoch < umap.epochs; epoch++) {
        umap.step();
        if (epoch % EPOCHS_PER_PAUSE === EPOCHS_PER_PAUSE - 1) await pause();
      }
      raw = umap.embedding;
      neighbours = { indices: umap.knnIndices, distances: umap.knnDistances, k: umap.k };
    }
    const frame = frameFor(raw, texts.length);
    const graph = neighbours === null ? null : placeGraph(flat, dimensions, raw, neighbours.indices, neighbours.distances, neighbours.k, CURVE);
    const model = new LayoutModel(space, graph, flat, raw, neighbours, frame, seed);
    return { model, points: applyFrame(frame, raw, texts.length) };
  }

  /** place returns the framed coordinates of new texts, placed by UMAP's transform into the fitted layout. */
  async place(texts: readonly string[], pause: Pause = yieldToEvents): Promise<Float32Array> {
    if (this.graph === null) throw new Error('A ring layout cannot place texts; fit again.');
    const out = new Float32Array(texts.length * 3);
    for (let start = 0; start < texts.length; ) {
      const size = Math.min(TRANSFORM_BATCH, texts.length - start);
      const batch = texts.slice(start, start + size);
      const vectors = batch.map((text) => this.space.embed(text));
      applyFrame(this.frame, transform(this.graph, vectors, batchRandom(this.seed, batch), TRANSFORM_EPOCHS), size, out, start);
      start += size;
      await pause();
    }
    return out;
  }

  /** toBytes serialises the model (gzip of a JSON header and the binary arrays). */
  toBytes(): Buffer {
    const { frequencies, vocabulary, projection, dimensions } = this.space.data;
    const header = JSON.stringify({
      version: MODEL_VERSION,
      seed: this.seed,
      dimensions,
      documents: frequencies.documents,
      vocabulary: vocabulary.length,
      sample: this.sampleSize,
      frame: this.frame,
      ring: this.graph === null,
      neighbours: this.neighbours?.k ?? 0,
    });
    const indices = this.neighbours?.indices ?? new Int32Array(0);
    const distances = this.neighbours?.distances ?? new Float64Array(0);
    const parts = [frequencies.counts, vocabulary, projection, this.sampleVectors, this.sampleRaw, indices, distances].map((array) =>
      Buffer.from(array.buffer, array.byteOffset, array.byteLength),
    );
    const head = Buffer.from(header);
    const length = Buffer.alloc(4);
    length.writeUInt32LE(head.length);
    return gzipSync(Buffer.concat([length, head, ...parts]), { level: 6 });
  }

  /** restore reads a model written by toBytes and makes it ready to place texts (the sample's neighbour graph rebuilt). */
  static restore(bytes: Uint8Array): LayoutModel {
    const data = gunzipSync(bytes);
    const headLength = data.readUInt32LE(0);
    const header = JSON.parse(data.subarray(4, 4 + headLength).toString()) as {
      version: number;
      seed: number;
      dimensions: number;
      documents: number;
      vocabulary: number;
      sample: number;
      frame: Frame;
      ring: boolean;
      neighbours: number;
    };
    if (header.version !== MODEL_VERSION) throw new Error(`The stored galaxy model has version ${header.version}; this code reads ${MODEL_VERSION}.`);
    let at = 4 + headLength;
    // Copies, so that every array is aligned and owns its memory.
    const take = <T>(make: (buffer: ArrayBuffer) => T, bytesLength: number): T => {
      const copy = new Uint8Array(bytesLength);
      copy.set(data.subarray(at, at + bytesLength));
      at += bytesLength;
      return make(copy.buffer);
    };
    const { dimensions, sample } = header;
    const counts = take((b) => new Uint16Array(b), new DocumentFrequencies().counts.byteLength);
    const vocabulary = take((b) => new Uint32Array(b), header.vocabulary * 4);
    const projection = take((b) => new Float32Array(b), header.vocabulary * dimensions * 4);
    const flat = take((b) => new Float32Array(b), sample * dimensions * 4);
    const raw = take((b) => new Float64Array(b), sample * 3 * 8);
    const k = header.neighbours;
    const indices = take((b) => new Int32Array(b), sample * k * 4);
    const distances = take((b) => new Float64Array(b), sample * k * 8);
    const neighbours: Neighbours | null = k === 0 ? null : { indices, distances, k };
    const space = new TextSpace({ frequencies: new DocumentFrequencies(counts, header.documents), vocabulary, projection, dimensions });
    const graph = header.ring || neighbours === null ? null : placeGraph(flat, dimensions, raw, indices, distances, k, CURVE);
    return new LayoutModel(space, graph, flat, raw, neighbours, header.frame, header.seed);
  }
}
