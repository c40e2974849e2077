// The stars of the galaxy page: read as CSV from GET /api/v1/nonsense/galaxy, kept in growable typed
// arrays that the scene draws from, so stars can come and go while the page is open.

/** @typedef {{ uuids: string[], positions: Float32Array, sizes: Float32Array, count: number }} StarList */

/**
 * loadStars fetches the galaxy as CSV (the smaller form), waiting while the first layout is computed.
 * @param {(seconds: number) => void} waiting told how long the page waits before it asks again
 * @param {(response: Response) => Promise<string>} failed the message of a failed response
 * @returns {Promise<StarList>}
 */
export async function loadStars(waiting, failed) {
  for (;;) {
    const response = await fetch('/api/v1/nonsense/galaxy', { headers: { accept: 'text/csv' } });
    if (response.status === 503) {
      const wait = Math.min(60, Number(response.headers.get('retry-after')) || 10);
      waiting(wait);
      await new Promise((resolve) => setTimeout(resolve, wait * 1000));
      continue;
    }
    if (!response.ok) throw new Error(await failed(response));
    return parseStars(await response.text());
  }
}

/**
 * parseStars reads the CSV: a header, then uuid,x,y,z,point_size per line (no field is ever quoted).
 * The body has no line break after its last record; empty lines are skipped all the same, so that
 * none can ever become a star at NaN.
 * @param {string} text
 * @returns {StarList}
 */
export function parseStars(text) {
  const lines = text.split('\r\n').slice(1).filter((line) => line !== '');
  const count = lines.length;
  /** @type {string[]} */
  const uuids = new Array(count);
  const positions = new Float32Array(count * 3);
  const sizes = new Float32Array(count);
  for (let i = 0; i < count; i++) {
    const fields = lines[i].split(',');
    uuids[i] = fields[0];
    positions[i * 3] = parseFloat(fields[1]);
    positions[i * 3 + 1] = parseFloat(fields[2]);
    positions[i * 3 + 2] = parseFloat(fields[3]);
    sizes[i] = parseFloat(fields[4]);
  }
  return { uuids, positions, sizes, count };
}

/**
 * pointSize is the galaxy's point_size of a raw text (docs/galaxy.md): 0.1 + 0.5 × ln(1 + n) / ln(2001)
 * for n code points, at most 2,000.
 * @param {string} text
 * @returns {number}
 */
export function pointSize(text) {
  const n = Math.min([...text].length, 2000);
  return Math.round((0.1 + (0.5 * Math.log(1 + n)) / Math.log(2001)) * 1000) / 1000;
}

/**
 * The stars shown, in arrays with room to grow: `count` are in use. A star's index changes when
 * another is removed (the last one takes its place), so callers hold uuids, not indexes, over time.
 */
export class Stars {
  /** @param {StarList} list */
  constructor(list) {
    const capacity = Math.max(16, list.count);
    this.count = list.count;
    /** @type {string[]} */
    this.uuids = list.uuids.slice();
    this.positions = new Float32Array(capacity * 3);
    this.positions.set(list.positions);
    this.sizes = new Float32Array(capacity);
    this.sizes.set(list.sizes);
    this.colors = new Float32Array(capacity * 3);
    this.highlight = new Float32Array(capacity);
    /** @type {Map<string, number>} */
    this.index = new Map(this.uuids.map((uuid, i) => [uuid, i]));
  }

  get capacity() {
    return this.sizes.length;
  }

  /**
   * add appends a star; when the arrays are full they are replaced by larger ones (`capacity` grows).
   * @param {string} uuid
   * @param {ArrayLike<number>} at x, y, z
   * @param {number} size
   * @returns {number} its index
   */
  add(uuid, at, size) {
    if (this.count === this.capacity) this.grow(this.capacity * 2);
    const i = this.count++;
    this.uuids[i] = uuid;
    this.index.set(uuid, i);
    this.positions.set([at[0], at[1], at[2]], i * 3);
    this.sizes[i] = size;
    this.highlight[i] = 0;
    return i;
  }

  /**
   * remove takes a star out: the last star moves into its place.
   * @param {string} uuid
   * @returns {{ removed: number, moved: number } | null} the index it had, and the one the last star had
   */
  remove(uuid) {
    const i = this.index.get(uuid);
    if (i === undefined) return null;
    const last = --this.count;
    this.index.delete(uuid);
    if (i !== last) {
      const moving = this.uuids[last];
      this.uuids[i] = moving;
      this.index.set(moving, i);
      this.positions.copyWithin(i * 3, last * 3, last * 3 + 3);
      this.colors.copyWithin(i * 3, last * 3, last * 3 + 3);
      this.sizes[i] = this.sizes[last];
      this.highlight[i] = this.highlight[last];
    }
    this.uuids.length = last;
    return { removed: i, moved: last };
  }

  /**
   * place moves star `i`.
   * @param {number} i
   * @param {ArrayLike<number>} at
   * @param {number} size
   */
  place(i, at, size) {
    this.positions.set([at[0], at[1], at[2]], i * 3);
    this.sizes[i] = size;
  }

  /** @param {number} capacity */
  grow(capacity) {
    /**
     * @param {Float32Array} old
     * @param {number} width values a star
     */
    const larger = (old, width) => {
      const next = new Float32Array(capacity * width);
      next.set(old);
      return next;
    };
    this.positions = larger(this.positions, 3);
    this.colors = larger(this.colors, 3);
    this.sizes = larger(this.sizes, 1);
    this.highlight = larger(this.highlight, 1);
  }
}
