// An entry on a reader's page, replaced without a reload ("Another one"): its text as the server
// renders it (text nodes, and <img> for each known custom emoji), its date and its links.
// Entry texts are untrusted: they only ever reach the page as text nodes, never as markup.
import { withClientWords } from '../lib/client-words.js';
import { one } from '../lib/dom.js';
import { problemDetail } from '../lib/problem.js';

// The emoji name grammar, as the server states it (domain/emojis.ts).
const EMOJI_AT = new RegExp(`:(${document.body.dataset.emojiName}):`, 'y');
const DATE = new Intl.DateTimeFormat('en-GB', { dateStyle: 'long', timeZone: 'UTC' });

/** @typedef {{ uuid: string, nonsense: string, timestamp: number }} ApiEntry */

/** @type {Map<string, string> | null} */
let emojiFiles = null;

/**
 * loadEmojis reads the custom emojis by name, with same-origin image paths (the CSP allows only 'self').
 * @returns {Promise<Map<string, string>>}
 */
async function loadEmojis() {
  if (emojiFiles !== null) return emojiFiles;
  const response = await fetch('/api/v1/emojis', { headers: { accept: 'application/json' } });
  if (!response.ok) return new Map();
  /** @type {{ name: string, url: string }[]} */
  const list = await response.json();
  emojiFiles = new Map(list.map((emoji) => [emoji.name, new URL(emoji.url, location.href).pathname]));
  return emojiFiles;
}

/**
 * fillText puts `text` into `element`: text nodes, and <img> for each known `:name:`.
 * @param {Element} element
 * @param {string} text
 * @param {Map<string, string>} emojis
 */
function fillText(element, text, emojis) {
  element.replaceChildren();
  let copiedUpTo = 0;
  let at = text.indexOf(':');
  // The same scan as the server's: the grammar is tried at every colon, so an unknown `:word:`
  // does not hide a known emoji that shares its closing colon.
  while (at !== -1) {
    EMOJI_AT.lastIndex = at;
    const match = EMOJI_AT.exec(text);
    const file = match ? emojis.get(match[1]) : undefined;
    if (match && file !== undefined) {
      element.append(document.createTextNode(text.slice(copiedUpTo, at)));
      const image = document.createElement('img');
      image.className = 'emoji';
      image.src = file;
      image.alt = image.title = `:${match[1]}:`;
      image.width = image.height = 128;
      element.append(image);
      copiedUpTo = at + match[0].length;
      at = text.indexOf(':', copiedUpTo);
    } else {
      at = text.indexOf(':', at + 1);
    }
  }
  element.append(document.createTextNode(text.slice(copiedUpTo)));
}

/**
 * plainText reads an entry's text back, emojis as their codes.
 * @param {Element} element
 * @returns {string}
 */
export function plainText(element) {
  let text = '';
  for (const node of element.childNodes) {
    if (node instanceof Text) text += node.data;
    else if (node instanceof HTMLImageElement) text += node.getAttribute('alt') || '';
    else text += node.textContent;
  }
  return text;
}

/**
 * showEntry replaces the entry of `article` with `entry` (as the API delivers it).
 * @param {HTMLElement} article
 * @param {ApiEntry} entry
 */
async function showEntry(article, entry) {
  const emojis = await loadEmojis();
  const previous = article.dataset.uuid ?? '';
  fillText(one(article, '.entry-text', HTMLElement), withClientWords(entry.nonsense), emojis);
  article.dataset.uuid = entry.uuid;
  article.dataset.shareUrl = (article.dataset.shareUrl ?? '').replace(previous, entry.uuid);
  const time = one(article, 'time', HTMLTimeElement);
  time.dateTime = new Date(entry.timestamp * 1000).toISOString();
  time.textContent = DATE.format(new Date(entry.timestamp * 1000));
  for (const link of article.querySelectorAll('a[href]')) {
    if (!(link instanceof HTMLAnchorElement)) continue;
    link.href = (link.getAttribute('href') ?? '').replace(previous, entry.uuid);
    if (link.hasAttribute('download')) link.setAttribute('download', `nonsense-${entry.uuid}.png`);
  }
}

/** @type {HTMLParagraphElement | null} */
let pageMessage = null;

/** @param {string} text */
function showPageMessage(text) {
  if (pageMessage === null) {
    pageMessage = document.createElement('p');
    pageMessage.className = 'message is-error';
    pageMessage.setAttribute('role', 'alert');
    document.getElementById('stage')?.after(pageMessage);
  }
  pageMessage.textContent = text;
}

function hidePageMessage() {
  if (pageMessage !== null) pageMessage.textContent = '';
}

/**
 * another shows a random entry in place of the page's; false when the page has no entry to replace.
 * @param {HTMLElement} button
 * @returns {Promise<boolean>}
 */
export async function another(button) {
  const stage = document.getElementById('stage');
  const article = stage && stage.querySelector('.entry');
  if (!stage || !(article instanceof HTMLElement)) return false;
  stage.classList.add('is-loading');
  stage.setAttribute('aria-busy', 'true');
  try {
    const response = await fetch('/api/v1/nonsense/random', { headers: { accept: 'application/json' }, cache: 'no-store' });
    if (!response.ok) {
      showPageMessage(`No other entry could be loaded: ${await problemDetail(response)}`);
      return true;
    }
    await showEntry(article, await response.json());
    hidePageMessage();
  } catch {
    showPageMessage('The service could not be reached. Check the connection and try again.');
  } finally {
    stage.classList.remove('is-loading');
    stage.removeAttribute('aria-busy');
    button.focus();
  }
  return true;
}
