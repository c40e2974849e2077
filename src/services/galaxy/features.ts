/**
 * The hashed TF-IDF features of a text, the first half of the galaxy's text vectors (the second half,
 * the reduction to a few dense dimensions, is `text-space.ts`). Built from the texts alone: nothing is
 * downloaded. See docs/galaxy.md.
 *
 * - Features: the words of the text (NFKC, lower-case; a pictographic emoji counts as a word) and the
 *   character 3- and 4-grams of each word padded with `<` and `>`. Words carry the meaning; n-grams
 *   relate "cat", "cats" and "catnap" and give scripts without spaces (Chinese, Japanese, Thai)
 *   useful features. Each feature is a 32-bit FNV-1a hash; words and n-grams hash with different
 *   seeds, so they do not meet.
 * - Weights: sublinear term frequency (1 + ln tf) times a smoothed IDF, ln((1 + N) / (1 + df)) + 1,
 *   with document frequencies counted in 2^20 hash buckets over the texts a layout was fitted on.
 *   The word part and the n-gram part are each scaled to unit length, the n-gram part to CHAR_WEIGHT,
 *   so that shared words dominate and shared fragments still count; then the whole has unit length.
 */

/** Bits of the hash buckets that document frequencies are counted in. */
export const IDF_BITS = 20;
/** Weight of the character n-gram part against the word part (each of unit length). */
const CHAR_WEIGHT = 0.6;
const NGRAM_SIZES = [3, 4] as const;

const WORD = /[\p{L}\p{N}\p{M}]+(?:['’][\p{L}\p{M}]+)*|\p{Extended_Pictographic}/gu;

const WORD_SEED = 0x9e3779b9;
const GRAM_SEED = 0x85ebca6b;

/** fnv1a is the 32-bit FNV-1a hash of a string's UTF-16 code units, with `seed` mixed in first. */
function fnv1a(text: string, seed: number): number {
  let hash = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** The hashed features of one text with their counts: words and character n-grams apart. */
export interface TextFeatures {
  words: Map<number, number>;
  grams: Map<number, number>;
}

/** features splits a text into hashed words and character n-grams, counted. */
export function features(text: string): TextFeatures {
  const words = new Map<number, number>();
  const grams = new Map<number, number>();
  const normal = text.normalize('NFKC').toLowerCase();
  let tokens = Array.from(normal.matchAll(WORD), (match) => match[0]);
  // A text of punctuation only ("?!", "...") still gets features: its characters.
  if (tokens.length === 0) tokens = [...normal].filter((char) => char.trim() !== '');
  for (const word of tokens) {
    const hash = fnv1a(word, WORD_SEED);
    words.set(hash, (words.get(hash) ?? 0) + 1);
    // The n-grams are of code points; each is hashed as the string of its code points would be.
    const padded = [...`<${word}>`];
    for (const size of NGRAM_SIZES) {
      for (let start = 0; start + size <= padded.length; start++) {
        let gram = (0x811c9dc5 ^ GRAM_SEED) >>> 0;
        for (let at = start; at < start + size; at++) {
          const char = padded[at]!;
          for (let i = 0; i < char.length; i++) gram = Math.imul(gram ^ char.charCodeAt(i), 0x01000193);
        }
        gram >>>= 0;
        grams.set(gram, (grams.get(gram) ?? 0) + 1);
      }
    }
  }
  return { words, grams };
}

const bucketOf = (hash: number) => hash >>> (32 - IDF_BITS);

/**
 * DocumentFrequencies counts, per hash bucket, how many texts contain a feature; the IDF weights come
 * from it. Counts saturate at 65,535 (a feature that common has the lowest weight anyway).
 */
export class DocumentFrequencies {
  constructor(
    readonly counts: Uint16Array = new Uint16Array(1 << IDF_BITS),
    public documents = 0,
  ) {}

  /** add counts the features of one more text. */
  add(text: TextFeatures): void {
    this.documents++;
    for (const map of [text.words, text.grams]) {
      for (const hash of map.keys()) {
        const bucket = bucketOf(hash);
        if (this.counts[bucket]! < 0xffff) this.counts[bucket]!++;
      }
    }
  }

  /** count is the number of texts that contain the feature (or another of its bucket). */
  count(hash: number): number {
    return this.counts[bucketOf(hash)]!;
  }

  idf(hash: number): number {
    return Math.log((1 + this.documents) / (1 + this.counts[bucketOf(hash)]!)) + 1;
  }
}

/** A sparse vector: feature hashes and their weights, in the same order. */
export interface SparseVector {
  keys: Uint32Array;
  values: Float64Array;
}

/** tfidf weighs a text's features (see the module comment); the result has unit length. */
export function tfidf(text: TextFeatures, frequencies: DocumentFrequencies): SparseVector {
  const size = text.words.size + text.grams.size;
  const keys = new Uint32Array(size);
  const values = new Float64Array(size);
  let at = 0;
  let total = 0;
  for (const [group, weight] of [[text.words, 1], [text.grams, CHAR_WEIGHT]] as const) {
    const start = at;
    let norm = 0;
    for (const [hash, count] of group) {
      const value = (1 + Math.log(count)) * frequencies.idf(hash);
      keys[at] = hash;
      values[at++] = value;
      norm += value * value;
    }
    if (norm === 0) continue;
    const scale = weight / Math.sqrt(norm);
    for (let i = start; i < at; i++) values[i]! *= scale;
    total += weight * weight;
  }
  if (total > 0) {
    const scale = 1 / Math.sqrt(total);
    for (let i = 0; i < at; i++) values[i]! *= scale;
  }
  return { keys, values };
}
