// Moving about the galaxy: drag or arrow keys turn it, the wheel or +/- zoom, 0 goes back to the
// start; hovering (or N/P) selects a star, a click (or Enter) opens it, Esc lets go.
import { FOV } from './scene.js';
/** @import { Scene } from './scene.js' */
/** @import { Selection, GalaxyState } from './selection.js' */
/** @import { Stars } from './stars.js' */

const START = { distance: 24, turnX: 0.35, turnY: 0 };
const MIN_DISTANCE = 3;
const MAX_DISTANCE = 120;

/**
 * createControls listens to the pointer and the keys on `canvas`; it returns `reset`, the start view.
 * @param {Scene} scene
 * @param {Stars} stars
 * @param {GalaxyState} state
 * @param {Selection} selection
 * @param {HTMLCanvasElement} canvas
 */
export function createControls(scene, stars, state, selection, canvas) {
  const { THREE, galaxy } = scene;
  const { select, open } = selection;
  const raycaster = new THREE.Raycaster();
  const pointer = new THREE.Vector2();
  /** @type {{ x: number, y: number, moved: boolean } | null} */
  let drag = null;
  /** @type {{ clientX: number, clientY: number } | null} */
  let hoverQueued = null;

  /**
   * pick is the star under the pointer (the highlighted ones only, after a search), or -1.
   * @param {number} clientX
   * @param {number} clientY
   */
  function pick(clientX, clientY) {
    const box = canvas.getBoundingClientRect();
    pointer.set(((clientX - box.left) / box.width) * 2 - 1, -((clientY - box.top) / box.height) * 2 + 1);
    raycaster.setFromCamera(pointer, scene.camera);
    // About 8 CSS pixels around the pointer, at the distance of the galaxy's centre.
    raycaster.params.Points.threshold = (8 / box.height) * 2 * scene.distance * Math.tan(((FOV / 2) * Math.PI) / 180);
    let best = -1;
    let bestRay = Infinity;
    for (const hit of raycaster.intersectObject(scene.points)) {
      const i = hit.index ?? -1;
      if (i < 0 || i >= stars.count || (state.searching && stars.highlight[i] === 0)) continue;
      if ((hit.distanceToRay ?? Infinity) < bestRay) {
        bestRay = hit.distanceToRay ?? Infinity;
        best = i;
      }
    }
    return best;
  }

  /**
   * @param {number} aroundY
   * @param {number} aroundX
   */
  function turn(aroundY, aroundX) {
    galaxy.rotation.y += aroundY;
    galaxy.rotation.x = Math.max(-Math.PI / 2, Math.min(Math.PI / 2, galaxy.rotation.x + aroundX));
    galaxy.updateMatrixWorld();
    scene.render();
  }

  /** @param {number} factor */
  function zoom(factor) {
    scene.distance = Math.max(MIN_DISTANCE, Math.min(MAX_DISTANCE, scene.distance * factor));
  }

  function reset() {
    galaxy.rotation.set(START.turnX, START.turnY, 0);
    galaxy.updateMatrixWorld();
    scene.distance = START.distance;
  }

  /** @param {number} direction 1 for the next star, -1 for the previous */
  function step(direction) {
    const list = state.searching ? state.matches : null;
    const length = list ? list.length : stars.count;
    if (length === 0) return;
    const at = list ? list.indexOf(state.selected) : state.selected;
    const next = at === -1 ? (direction > 0 ? 0 : length - 1) : (at + direction + length) % length;
    void select(list ? list[next] : next, 'keys');
  }

  canvas.addEventListener('pointerdown', (event) => {
    drag = { x: event.clientX, y: event.clientY, moved: false };
    canvas.setPointerCapture(event.pointerId);
  });
  canvas.addEventListener('pointermove', (event) => {
    if (drag !== null) {
      const dx = event.clientX - drag.x;
      const dy = event.clientY - drag.y;
      if (!drag.moved && Math.hypot(dx, dy) < 4) return;
      drag.moved = true;
      drag.x = event.clientX;
      drag.y = event.clientY;
      turn(dx * 0.006, dy * 0.006);
      return;
    }
    // One pick per frame at most: it looks at every star.
    if (hoverQueued === null) {
      requestAnimationFrame(() => {
        if (hoverQueued === null) return;
        const { clientX, clientY } = hoverQueued;
        hoverQueued = null;
        const found = pick(clientX, clientY);
        if (found !== -1 || state.tipFor !== -1) void select(found, 'pointer');
      });
    }
    hoverQueued = { clientX: event.clientX, clientY: event.clientY };
  });
  canvas.addEventListener('pointerup', (event) => {
    const clicked = drag !== null && !drag.moved;
    drag = null;
    if (!clicked) return;
    const found = pick(event.clientX, event.clientY);
    if (found !== -1) open(found);
  });
  canvas.addEventListener('pointerleave', () => {
    if (drag === null && state.tipFor !== -1) void select(-1);
  });
  canvas.addEventListener(
    'wheel',
    (event) => {
      event.preventDefault();
      zoom(Math.exp(event.deltaY * 0.0015));
    },
    { passive: false },
  );

  /** @type {Record<string, () => void>} */
  const keys = {
    ArrowLeft: () => turn(-0.1, 0),
    ArrowRight: () => turn(0.1, 0),
    ArrowUp: () => turn(0, -0.1),
    ArrowDown: () => turn(0, 0.1),
    '+': () => zoom(1 / 1.2),
    '=': () => zoom(1 / 1.2),
    '-': () => zoom(1.2),
    0: reset,
    n: () => step(1),
    N: () => step(1),
    p: () => step(-1),
    P: () => step(-1),
    Enter: () => open(state.selected),
    Escape: () => void select(-1),
  };
  canvas.addEventListener('keydown', (event) => {
    const action = keys[event.key];
    if (action === undefined || event.ctrlKey || event.metaKey || event.altKey) return;
    event.preventDefault();
    action();
  });

  return { reset };
}
