// The galaxy while it changes: the page follows the change feed (GET /api/v1/nonsense/events) from
// the revision it read before the stars, so nothing falls between the two. A created entry becomes a
// star at once, at a provisional spot until the layout has placed it; a hidden or deleted one leaves;
// a restored one comes back where it was, or provisionally. See docs/galaxy.md, "The page".
import { withClientWords } from '../lib/client-words.js';
import { starColor } from './scene.js';
import { parseStars, pointSize } from './stars.js';
/** @import { Scene } from './scene.js' */
/** @import { Selection, GalaxyState } from './selection.js' */
/** @import { Stars, StarList } from './stars.js' */

/** The first look for the layout's place of new stars (the layout places them within seconds), then how often. */
const SETTLE_FIRST_MS = 3000;
const SETTLE_EVERY_MS = 5000;
/** A star the layout has not placed after this long (no layout thread runs) keeps its provisional spot. */
const SETTLE_GIVE_UP_MS = 60_000;
/** How long the page waits before it opens the stream again after the service refused it. */
const REOPEN_MS = 30_000;
/** The places of stars that left, kept for their return; the oldest are forgotten first. */
const DEPARTED_KEPT = 10_000;

/**
 * provisionalSpot is where a star the layout has not placed yet is drawn: a spot inside the central
 * part of the galaxy (within 4 units of the centre) that its uuid decides, so every page agrees.
 * @param {string} uuid
 * @returns {number[]}
 */
export function provisionalSpot(uuid) {
  const hex = uuid.replace(/-/g, '');
  const [a, b, c] = [0, 20, 24].map((at) => parseInt(hex.slice(at, at + 8), 16) / 2 ** 32);
  const angle = 2 * Math.PI * a;
  const cos = 2 * b - 1;
  const sin = Math.sqrt(1 - cos * cos);
  const radius = 4 * Math.cbrt(c);
  return [radius * sin * Math.cos(angle), radius * cos, radius * sin * Math.sin(angle)];
}

/**
 * @typedef {object} Change
 * @property {number} revision
 * @property {string} type
 * @property {string} key
 * @property {{ uuid: string, nonsense: string, original_nonsense?: string } | undefined} entry
 */

/**
 * followChanges keeps the stars current from revision `since` (null: from now on).
 * @param {{ scene: Scene, stars: Stars, state: GalaxyState, selection: Selection, view: HTMLElement, since: number | null, shown: () => void }} galaxy
 *   `shown` is called after stars came or went
 */
export function followChanges({ scene, stars, state, selection, view, since, shown }) {
  /** @type {Map<string, { at: number[], size: number }>} */
  const departed = new Map();
  /** The stars waiting for the layout's place, with when the page stops waiting. @type {Map<string, number>} */
  const unsettled = new Map();
  /** @type {ReturnType<typeof setTimeout> | null} */
  let settleTimer = null;
  let last = since;

  function updated() {
    view.dataset.stars = String(stars.count);
    view.dataset.placing = String(unsettled.size);
    if (state.searching) view.dataset.matches = String(state.matches.length);
    if (state.selected !== -1) scene.ring(state.selected);
    shown();
  }

  /**
   * @param {string} uuid
   * @param {number[]} at
   * @param {number} size
   */
  function addStar(uuid, at, size) {
    const arrays = stars.positions;
    const i = stars.add(uuid, at, size);
    starColor(stars, i);
    if (stars.positions !== arrays) scene.bind();
    else scene.changed();
  }

  /** @param {string} uuid */
  function removeStar(uuid) {
    const i = stars.index.get(uuid);
    if (i === undefined) return;
    if (state.selected === i) void selection.select(-1);
    departed.delete(uuid);
    departed.set(uuid, { at: Array.from(stars.positions.subarray(i * 3, i * 3 + 3)), size: stars.sizes[i] });
    if (departed.size > DEPARTED_KEPT) departed.delete(/** @type {string} */ (departed.keys().next().value));
    unsettled.delete(uuid);
    const { removed, moved } = /** @type {{ removed: number, moved: number }} */ (stars.remove(uuid));
    // The last star now has the index of the one that left.
    if (state.selected === moved) state.selected = removed;
    if (state.tipFor === moved) state.tipFor = removed;
    state.matches = state.matches.filter((m) => m !== removed).map((m) => (m === moved ? removed : m));
    scene.changed();
  }

  /** @param {string} uuid */
  function unsettle(uuid) {
    unsettled.set(uuid, Date.now() + SETTLE_GIVE_UP_MS);
    settleTimer ??= setTimeout(settle, SETTLE_FIRST_MS);
  }

  /** settle reads the galaxy again (a 304 while it is unchanged) and moves the waiting stars to their place. */
  async function settle() {
    /** @type {StarList | null} */
    let list = null;
    try {
      const response = await fetch('/api/v1/nonsense/galaxy', { headers: { accept: 'text/csv' } });
      if (response.ok) list = parseStars(await response.text());
    } catch {
      // Asked again below while stars still wait.
    }
    if (list !== null) {
      for (let k = 0; k < list.count; k++) {
        const uuid = list.uuids[k];
        const i = unsettled.has(uuid) ? stars.index.get(uuid) : undefined;
        if (i === undefined) continue;
        stars.place(i, list.positions.subarray(k * 3, k * 3 + 3), list.sizes[k]);
        unsettled.delete(uuid);
      }
      scene.changed();
    }
    const now = Date.now();
    for (const [uuid, until] of unsettled) if (until < now) unsettled.delete(uuid);
    updated();
    settleTimer = unsettled.size > 0 ? setTimeout(settle, SETTLE_EVERY_MS) : null;
  }

  /** @param {Change} change */
  function apply(change) {
    const uuid = change.key;
    if (change.type === 'entry.hidden' || change.type === 'entry.deleted') {
      removeStar(uuid);
    } else if (change.entry !== undefined && (change.type === 'entry.created' || change.type === 'entry.restored' || change.type === 'entry.updated')) {
      selection.texts.set(uuid, withClientWords(change.entry.nonsense));
      const size = pointSize(change.entry.original_nonsense ?? change.entry.nonsense);
      const i = stars.index.get(uuid);
      const back = departed.get(uuid);
      if (i !== undefined) stars.place(i, stars.positions.subarray(i * 3, i * 3 + 3), size);
      else addStar(uuid, back?.at ?? provisionalSpot(uuid), size);
      // The layout places an edited or returning entry anew, and a new one for the first time.
      unsettle(uuid);
      if (i !== undefined) scene.changed();
    } else {
      return;
    }
    updated();
  }

  /** @type {EventSource | null} */
  let source = null;
  function open() {
    source = new EventSource(`/api/v1/nonsense/events${last === null ? '' : `?since=${last}`}`);
    source.addEventListener('open', () => (view.dataset.live = 'on'));
    for (const type of ['entry.created', 'entry.updated', 'entry.hidden', 'entry.restored', 'entry.deleted']) {
      source.addEventListener(type, (event) => {
        /** @type {Change} */
        const change = JSON.parse(event.data);
        last = change.revision;
        apply(change);
      });
    }
    // The page was away longer than the log is kept: it takes the whole galaxy as it is now.
    source.addEventListener('reset', () => {
      source?.close();
      void resync();
    });
    source.addEventListener('error', () => {
      view.dataset.live = 'off';
      // EventSource reconnects by itself after a broken stream, not after a refusal (429, 503).
      if (source?.readyState === EventSource.CLOSED) setTimeout(open, REOPEN_MS);
    });
  }

  /** resync makes the stars those of the galaxy now, and follows the changes from there. */
  async function resync() {
    try {
      const status = await fetch('/api/v1/nonsense/status', { headers: { accept: 'application/json' }, cache: 'no-store' });
      const response = await fetch('/api/v1/nonsense/galaxy', { headers: { accept: 'text/csv' } });
      if (!status.ok || !response.ok) throw new Error(`The service answered ${status.status} and ${response.status}.`);
      last = (await status.json()).revision;
      const list = parseStars(await response.text());
      const now = new Set(list.uuids);
      for (const uuid of stars.uuids.slice()) if (!now.has(uuid)) removeStar(uuid);
      for (let k = 0; k < list.count; k++) {
        const i = stars.index.get(list.uuids[k]);
        const at = list.positions.subarray(k * 3, k * 3 + 3);
        if (i === undefined) addStar(list.uuids[k], Array.from(at), list.sizes[k]);
        else stars.place(i, at, list.sizes[k]);
      }
      scene.changed();
      updated();
      open();
    } catch {
      setTimeout(() => void resync(), REOPEN_MS);
    }
  }

  open();
}
