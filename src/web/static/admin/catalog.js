// The variables and the custom emojis: listed from the public API, changed through the admin API.
import { api } from './api.js';
import { button, el, empty, say } from './ui.js';
import { byId } from '../lib/dom.js';

/** @typedef {{ name: string, scope: 'server' | 'client', description: string, values: string[] }} Variable */
/** @typedef {{ name: string, code: string, url: string }} Emoji */

export async function loadVariables() {
  const response = await fetch('/api/v1/variables', { cache: 'no-store' });
  if (!response.ok) return say('The variables could not be loaded.', 'error');
  /** @type {Variable[]} */
  const variables = await response.json();
  byId('variable-list').replaceChildren(...variables.map(variableCard));
}

/**
 * @param {Variable} variable
 * @returns {HTMLLIElement}
 */
function variableCard(variable) {
  const card = el(
    'li',
    { className: 'card' },
    el('p', { className: 'card-meta' }, el('code', { textContent: variable.name }), el('span', { className: 'tag', textContent: variable.scope === 'server' ? 'Server' : 'Client' })),
    el('p', { className: 'card-details', textContent: variable.description }),
    variable.scope === 'server'
      ? el('p', { className: 'values', textContent: `${variable.values.length} values: ${variable.values.join(' · ')}` })
      : el('p', { className: 'values', textContent: 'Left in the text for clients; this site shows a neutral word.' }),
  );
  if (variable.scope === 'server') {
    const edit = () => {
      byId('variable-name', HTMLInputElement).value = variable.name;
      byId('variable-description', HTMLInputElement).value = variable.description;
      const values = byId('variable-values', HTMLTextAreaElement);
      values.value = variable.values.join('\n');
      values.focus();
    };
    const remove = async () => {
      if (!window.confirm(`Delete ${variable.name}? Entries that use it will show it as plain text.`)) return;
      const result = await api('DELETE', `/api/v1/admin/variables/${encodeURIComponent(variable.name)}`);
      if (!result.ok) return say(`The variable was not deleted: ${result.detail}`, 'error');
      say(`${variable.name} deleted.`, 'success');
      await loadVariables();
      byId('variables-title').focus();
    };
    card.append(el('div', { className: 'actions' }, button('Edit', edit), button('Delete', remove, 'button-danger')));
  }
  return card;
}

byId('variable-form', HTMLFormElement).addEventListener('submit', async (event) => {
  event.preventDefault();
  const name = byId('variable-name', HTMLInputElement).value.trim();
  const values = byId('variable-values', HTMLTextAreaElement)
    .value.split('\n')
    .map((value) => value.trim())
    .filter((value) => value !== '');
  const result = await api('PUT', `/api/v1/admin/variables/${encodeURIComponent(name)}`, { description: byId('variable-description', HTMLInputElement).value, values });
  if (!result.ok) return say(`The variable was not saved: ${result.detail}`, 'error');
  say(`${name} ${result.status === 201 ? 'added' : 'saved'}.`, 'success');
  byId('variable-form', HTMLFormElement).reset();
  await loadVariables();
});

export async function loadEmojis() {
  const response = await fetch('/api/v1/emojis', { cache: 'no-store' });
  const list = byId('emoji-list');
  if (!response.ok) return say('The emojis could not be loaded.', 'error');
  /** @type {Emoji[]} */
  const emojis = await response.json();
  if (emojis.length === 0) return empty(list, 'No custom emojis yet.');
  // The images may be cached for an hour; a fresh query string shows a replaced image at once.
  const fresh = Date.now();
  list.replaceChildren(
    ...emojis.map((emoji) => {
      const remove = async () => {
        if (!window.confirm(`Delete ${emoji.code}? Entries that use it will show the code as text.`)) return;
        const result = await api('DELETE', `/api/v1/admin/emojis/${encodeURIComponent(emoji.name)}`);
        if (!result.ok) return say(`The emoji was not deleted: ${result.detail}`, 'error');
        say(`${emoji.code} deleted.`, 'success');
        await loadEmojis();
        byId('emojis-title').focus();
      };
      return el(
        'li',
        { className: 'card' },
        el('img', { src: `${new URL(emoji.url, location.href).pathname}?v=${fresh}`, alt: emoji.code, width: 64, height: 64 }),
        el('code', { textContent: emoji.code }),
        button('Delete', remove, 'button-danger'),
      );
    }),
  );
}

byId('emoji-form', HTMLFormElement).addEventListener('submit', async (event) => {
  event.preventDefault();
  const name = byId('emoji-name', HTMLInputElement).value.trim();
  const file = byId('emoji-file', HTMLInputElement).files?.[0];
  if (!file) return say('Choose an image file.', 'error');
  const result = await api('PUT', `/api/v1/admin/emojis/${encodeURIComponent(name)}`, file, file.type || 'application/octet-stream');
  if (!result.ok) return say(`The emoji was not saved: ${result.detail}`, 'error');
  say(`:${name}: ${result.status === 201 ? 'added' : 'replaced'}.`, 'success');
  byId('emoji-form', HTMLFormElement).reset();
  await loadEmojis();
});
