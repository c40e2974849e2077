/**
 * Choosing a refit's sample: the entries whose uuid hashes lowest (ties by id), so the sample is
 * stable as entries come and go. The entries' keys are walked once, in pages, and only the `limit`
 * best so far are held (a max-heap in typed arrays), so the choice takes memory for the sample and
 * a page, whatever the number of entries.
 */

/** fnv1a of a uuid: the sample is the entries with the lowest values. */
export function uuidHash(uuid: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < uuid.length; i++) {
    hash ^= uuid.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** LowestKeys keeps the `limit` keys with the lowest (hash, id) among those added. */
export class LowestKeys {
  private readonly hashes: Float64Array;
  private readonly ids: Float64Array;
  private count = 0;

  constructor(readonly limit: number) {
    this.hashes = new Float64Array(limit);
    this.ids = new Float64Array(limit);
  }

  /** How many keys are held now: never more than `limit`. */
  get size(): number {
    return this.count;
  }

  /** Whether key a comes after key b (the heap keeps the greatest on top). */
  private after(hashA: number, idA: number, hashB: number, idB: number): boolean {
    return hashA > hashB || (hashA === hashB && idA > idB);
  }

  add(hash: number, id: number): void {
    const { hashes, ids } = this;
    if (this.count < this.limit) {
      // Sift up from the end.
      let at = this.count++;
      while (at > 0) {
        const parent = (at - 1) >> 1;
        if (!this.after(hash, id, hashes[parent]!, ids[parent]!)) break;
        hashes[at] = hashes[parent]!;
        ids[at] = ids[parent]!;
        at = parent;
      }
      hashes[at] = hash;
      ids[at] = id;
      return;
    }
    if (this.limit === 0 || !this.after(hashes[0]!, ids[0]!, hash, id)) return;
    // Replace the greatest and sift down.
    let at = 0;
    for (;;) {
      const left = 2 * at + 1;
      if (left >= this.count) break;
      const right = left + 1;
      const child = right < this.count && this.after(hashes[right]!, ids[right]!, hashes[left]!, ids[left]!) ? right : left;
      if (!this.after(hashes[child]!, ids[child]!, hash, id)) break;
      hashes[at] = hashes[child]!;
      ids[at] = ids[child]!;
      at = child;
    }
    hashes[at] = hash;
    ids[at] = id;
  }

  /** The ids held, in ascending order. */
  sortedIds(): number[] {
    return Array.from(this.ids.subarray(0, this.count)).sort((a, b) => a - b);
  }
}

/** sampleIds walks pages of entry keys and returns the ids of the `limit` whose uuids hash lowest, ascending. */
export async function sampleIds(pages: AsyncIterable<readonly { id: number; uuid: string }[]>, limit: number): Promise<number[]> {
  const lowest = new LowestKeys(limit);
  for await (const page of pages) for (const { id, uuid } of page) lowest.add(uuidHash(uuid), id);
  return lowest.sortedIds();
}
