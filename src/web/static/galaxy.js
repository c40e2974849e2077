// The galaxy page: every entry as a star of GET /api/v1/nonsense/galaxy, drawn with three.js (its
// module build, served by the service; loaded with import(), as the page's policy allows scripts from
// the service only) while the stars load. Stars come and go with the change feed (galaxy/live.js).
// Entry texts are untrusted: they only ever reach the page as text (textContent).
import { followChanges } from './galaxy/live.js';
import { createControls } from './galaxy/controls.js';
import { createScene } from './galaxy/scene.js';
import { followSearch } from './galaxy/search.js';
import { createSelection } from './galaxy/selection.js';
import { loadStars, Stars } from './galaxy/stars.js';
import { byId, one } from './lib/dom.js';
import { problemDetail } from './lib/problem.js';
/** @import { Three } from './galaxy/scene.js' */
/** @import { GalaxyState } from './galaxy/selection.js' */

/**
 * @param {string} href
 * @param {string} text
 */
function link(href, text) {
  const a = document.createElement('a');
  a.href = href;
  a.textContent = text;
  return a;
}

function webglAvailable() {
  try {
    const probe = document.createElement('canvas');
    return Boolean(probe.getContext('webgl2') || probe.getContext('webgl'));
  } catch {
    return false;
  }
}

/** readRevision is the status's revision, from which the page follows the changes; null if unknown. */
async function readRevision() {
  try {
    const response = await fetch('/api/v1/nonsense/status', { headers: { accept: 'application/json' }, cache: 'no-store' });
    return response.ok ? /** @type {number} */ ((await response.json()).revision) : null;
  } catch {
    return null;
  }
}

/** @param {HTMLElement} view */
async function start(view) {
  const canvas = byId('galaxy-canvas', HTMLCanvasElement);
  const status = byId('galaxy-status');
  const form = one(document, '.galaxy-search', HTMLFormElement);

  /**
   * setState shows where the page is (loading, waiting, ready, no-webgl, error) and a message, or none.
   * @param {string} state
   * @param {...(string | Node)} message
   */
  function setState(state, ...message) {
    view.dataset.state = state;
    status.replaceChildren(...message);
    status.hidden = message.length === 0;
  }

  if (!webglAvailable()) {
    canvas.hidden = true;
    setState(
      'no-webgl',
      'This browser cannot draw WebGL, so the galaxy cannot be shown here. The galaxy is a 3D map of the entries in which similar entries are close together. You can ',
      link('/search', 'search the entries'),
      ' instead, or download the star map as ',
      link('/api/v1/nonsense/galaxy', 'CSV'),
      '.',
    );
    form.hidden = true;
    return;
  }

  try {
    setState('loading', 'Loading the galaxy…');
    const three = /** @type {Promise<Three>} */ (import(document.body.dataset.three ?? ''));
    // The revision first: every change after it reaches the page, those in the stars already included.
    const since = await readRevision();
    const list = await loadStars((wait) => setState('waiting', `The galaxy is still being laid out; trying again in ${wait} s.`), problemDetail);
    const THREE = await three;
    const stars = new Stars(list);
    /** @type {GalaxyState} */
    const state = { selected: -1, tipFor: -1, searching: false, matches: [] };
    const scene = createScene(THREE, stars, canvas);
    const selection = createSelection(scene, stars, state, canvas, byId('galaxy-tip'));
    const { reset } = createControls(scene, stars, state, selection, canvas);
    followSearch(scene, stars, state, selection, { form, input: byId('galaxy-q', HTMLInputElement), line: byId('galaxy-matches'), view });
    const shown = () => (stars.count === 0 ? setState('ready', 'The galaxy is empty: there are no entries yet.') : setState('ready'));
    scene.bind();
    reset();
    scene.theme();
    scene.resize();
    view.dataset.stars = String(stars.count);
    shown();
    followChanges({ scene, stars, state, selection, view, since, shown });
  } catch (error) {
    setState('error', `The galaxy could not be shown: ${error instanceof Error ? error.message : String(error)}`);
  }
}

const view = document.getElementById('galaxy-view');
if (view !== null) void start(view);
