// The search: highlight the stars of the entries whose text contains the term (the export's `q`).
import { problemDetail } from '../lib/problem.js';
/** @import { Scene } from './scene.js' */
/** @import { Selection, GalaxyState } from './selection.js' */
/** @import { Stars } from './stars.js' */

/**
 * followSearch makes `form` highlight the stars that match, and says how many in `line`.
 * @param {Scene} scene
 * @param {Stars} stars
 * @param {GalaxyState} state
 * @param {Selection} selection
 * @param {{ form: HTMLFormElement, input: HTMLInputElement, line: HTMLElement, view: HTMLElement }} elements
 */
export function followSearch(scene, stars, state, selection, { form, input, line, view }) {
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const q = input.value.trim();
    stars.highlight.fill(0);
    state.matches = [];
    state.searching = q !== '';
    if (state.searching) {
      line.textContent = 'Searching…';
      const response = await fetch(`/api/v1/nonsense?format=json&q=${encodeURIComponent(q)}`, { headers: { accept: 'application/json' } });
      if (!response.ok) {
        state.searching = false;
        line.textContent = await problemDetail(response);
      } else {
        /** @type {{ uuid: string }[]} */
        const found = await response.json();
        for (const entry of found) {
          const i = stars.index.get(entry.uuid);
          if (i === undefined) continue;
          stars.highlight[i] = 1;
          state.matches.push(i);
        }
        line.textContent =
          state.matches.length === 0
            ? `No star matches “${q}”.`
            : `${state.matches.length} of ${stars.count} stars match “${q}”: they are brighter now. Focus the map and press N for the first.`;
      }
    } else {
      line.textContent = '';
    }
    scene.uniforms.searching.value = state.searching ? 1 : 0;
    view.dataset.matches = String(state.matches.length);
    if (state.selected !== -1 && state.searching && stars.highlight[state.selected] === 0) void selection.select(-1);
    scene.changed();
  });
}
