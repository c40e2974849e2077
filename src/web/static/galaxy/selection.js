// The selected star: its ring, the tip with its text (read on demand from the entry API, shown only
// as text), and opening its share page.
import { withClientWords } from '../lib/client-words.js';
/** @import { Scene } from './scene.js' */
/** @import { Stars } from './stars.js' */

/**
 * What the page shows: the selected star (-1: none), the star the tip is for, and the stars a
 * search matched (`matches`, indexes, while `searching`).
 * @typedef {{ selected: number, tipFor: number, searching: boolean, matches: number[] }} GalaxyState
 */

/**
 * createSelection selects stars on `scene` and shows their text in `tip`.
 * @param {Scene} scene
 * @param {Stars} stars
 * @param {GalaxyState} state
 * @param {HTMLCanvasElement} canvas
 * @param {HTMLElement} tip
 */
export function createSelection(scene, stars, state, canvas, tip) {
  /** The texts shown so far, by uuid. @type {Map<string, string>} */
  const texts = new Map();
  const screen = new scene.THREE.Vector3();

  /**
   * @param {string} uuid
   * @returns {Promise<string>}
   */
  async function entryText(uuid) {
    const known = texts.get(uuid);
    if (known !== undefined) return known;
    const response = await fetch(`/api/v1/nonsense/${uuid}`, { headers: { accept: 'application/json' } });
    const text = response.ok ? withClientWords((await response.json()).nonsense) : 'This entry is no longer available.';
    texts.set(uuid, text);
    return text;
  }

  /** @param {number} i */
  function screenPosition(i) {
    screen.fromArray(stars.positions, i * 3).applyMatrix4(scene.galaxy.matrixWorld).project(scene.camera);
    return { x: ((screen.x + 1) / 2) * canvas.clientWidth, y: ((1 - screen.y) / 2) * canvas.clientHeight, visible: screen.z < 1 };
  }

  /** @param {number} i */
  function positionTip(i) {
    const { x, y, visible } = screenPosition(i);
    tip.dataset.x = x.toFixed(1);
    tip.dataset.y = y.toFixed(1);
    tip.style.left = `${Math.min(Math.max(x + 14, 0), Math.max(canvas.clientWidth - tip.offsetWidth, 0))}px`;
    tip.style.top = `${y + 14 + tip.offsetHeight > canvas.clientHeight ? Math.max(y - 14 - tip.offsetHeight, 0) : y + 14}px`;
    tip.hidden = !visible;
  }

  scene.onRender(() => {
    if (state.selected !== -1) positionTip(state.selected);
  });

  /**
   * select shows star `i` (-1: none), chosen by the pointer or by keys (which the hint names).
   * @param {number} i
   * @param {'pointer' | 'keys'} [how]
   */
  async function select(i, how = 'keys') {
    if (i === state.selected) return;
    state.selected = i;
    scene.ring(i);
    if (i === -1) {
      tip.hidden = true;
      state.tipFor = -1;
      canvas.style.cursor = '';
      return;
    }
    canvas.style.cursor = how === 'pointer' ? 'pointer' : '';
    state.tipFor = i;
    const uuid = stars.uuids[i];
    tip.dataset.uuid = uuid;
    tip.textContent = '…';
    tip.hidden = false;
    positionTip(i);
    const text = await entryText(uuid);
    if (state.tipFor !== i || stars.uuids[i] !== uuid) return;
    tip.replaceChildren(document.createTextNode(text));
    const hint = document.createElement('span');
    hint.className = 'galaxy-tip-hint';
    hint.textContent = how === 'pointer' ? 'Click to open' : 'Enter to open';
    tip.append(hint);
    positionTip(i);
  }

  /** @param {number} i */
  function open(i) {
    if (i !== -1) window.location.assign(`/nonsense/${stars.uuids[i]}`);
  }

  return { select, open, texts };
}

/** @typedef {ReturnType<typeof createSelection>} Selection */
