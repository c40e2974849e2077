// The entries of any state: find, edit, hide, show, delete and add.
import { api } from './api.js';
import { button, DATE, el, empty, entryQuote, say, stateTag } from './ui.js';
import { byId } from '../lib/dom.js';

/** @typedef {{ uuid: string, text: string, state: string, timestamp: number }} AdminEntry */

/** @type {string | null} */
let entryNext = null;

/**
 * searchEntries shows the first page of entries that match the form, or with `more` appends the next.
 * @param {boolean} more
 */
export async function searchEntries(more) {
  const q = byId('entry-q', HTMLInputElement).value.trim();
  const state = byId('entry-state', HTMLSelectElement).value || 'any';
  const params = new URLSearchParams({ q, state, limit: '20' });
  // The next page is the one the last page's Link header named.
  const result = await api('GET', more && entryNext ? entryNext : `/api/v1/admin/nonsense?${params}`);
  if (!result.ok) return say(`The entries could not be loaded: ${result.detail}`, 'error');
  const list = byId('entry-list');
  /** @type {AdminEntry[]} */
  const entries = result.data;
  const cards = entries.map(entryCard);
  if (more) list.append(...cards);
  else if (cards.length === 0) empty(list, 'No entries match.');
  else list.replaceChildren(...cards);
  entryNext = result.next;
  byId('entry-more').hidden = entryNext === null;
  if (more && cards.length > 0) cards[0].querySelector('button')?.focus();
}

/**
 * entryCard shows an entry with the buttons that change it; the card follows its changes.
 * @param {AdminEntry} entry
 * @returns {HTMLLIElement}
 */
function entryCard(entry) {
  const card = el('li', { className: 'card', dataset: { uuid: entry.uuid } });
  const firstButton = () => card.querySelector('button')?.focus();
  render(entry);
  return card;

  /** @param {AdminEntry} current */
  function render(current) {
    entry = current;
    card.classList.toggle('is-hidden-entry', entry.state === 'hidden');
    const meta = el(
      'p',
      { className: 'card-meta' },
      stateTag(entry.state),
      el('span', { textContent: `Added ${DATE.format(new Date(entry.timestamp * 1000))}` }),
      el('code', { textContent: entry.uuid }),
    );
    const actions = el(
      'div',
      { className: 'actions' },
      button('Edit', edit),
      button(entry.state === 'hidden' ? 'Show' : 'Hide', toggle),
      entry.state === 'visible' ? el('a', { className: 'button button-small', href: `/nonsense/${entry.uuid}`, textContent: 'Share page' }) : null,
      button('Delete', remove, 'button-danger'),
    );
    card.replaceChildren(meta, entryQuote(entry.text), actions);
  }

  /**
   * @param {{ text?: string, state?: string }} change
   * @param {string} done
   */
  async function patch(change, done) {
    const result = await api('PATCH', `/api/v1/admin/nonsense/${entry.uuid}`, change);
    if (!result.ok) {
      say(`The entry was not changed: ${result.detail}`, 'error');
      return false;
    }
    render(result.data);
    say(done, 'success');
    return true;
  }

  async function toggle() {
    const hide = entry.state === 'visible';
    if (await patch({ state: hide ? 'hidden' : 'visible' }, hide ? 'Entry hidden.' : 'Entry visible again.')) card.querySelectorAll('button')[1]?.focus();
  }

  function edit() {
    const id = `edit-${entry.uuid}`;
    const area = el('textarea', { id, value: entry.text, rows: Math.min(12, entry.text.split('\n').length + 2), maxLength: 2000 });
    const form = el(
      'form',
      { className: 'stack' },
      el('div', { className: 'field' }, el('label', { htmlFor: id, textContent: 'Text' }), area),
      el(
        'div',
        { className: 'actions' },
        el('button', { type: 'submit', className: 'button button-small button-primary', textContent: 'Save' }),
        button('Cancel', () => {
          render(entry);
          firstButton();
        }),
      ),
    );
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      if (await patch({ text: area.value }, 'Entry saved.')) firstButton();
    });
    card.replaceChildren(/** @type {Node} */ (card.firstChild), form);
    area.focus();
  }

  async function remove() {
    if (!window.confirm('Delete this entry for good, with the reports on it? Hiding it can be undone; deleting cannot.')) return;
    const result = await api('DELETE', `/api/v1/admin/nonsense/${entry.uuid}`);
    if (!result.ok) return say(`The entry was not deleted: ${result.detail}`, 'error');
    card.remove();
    say('Entry deleted.', 'success');
    byId('entries-title').focus();
  }
}

byId('entry-search').addEventListener('submit', (event) => {
  event.preventDefault();
  void searchEntries(false);
});
byId('entry-more').addEventListener('click', () => void searchEntries(true));

byId('entry-add').addEventListener('submit', async (event) => {
  event.preventDefault();
  const text = byId('entry-text', HTMLTextAreaElement);
  const result = await api('POST', '/api/v1/admin/nonsense', { text: text.value });
  if (!result.ok) return say(`The entry was not added: ${result.detail}`, 'error');
  text.value = '';
  const list = byId('entry-list');
  if (list.firstElementChild && !list.firstElementChild.classList.contains('card')) list.replaceChildren();
  list.prepend(entryCard(result.data));
  say('Entry added. It is visible now.', 'success');
});

