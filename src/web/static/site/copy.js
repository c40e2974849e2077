// Copying an entry's link or text, with a short confirmation on the button and for screen readers.
import { plainText } from './entry-view.js';
import { one } from '../lib/dom.js';

// A polite live region for short confirmations ("Link copied").
const announcer = document.createElement('p');
announcer.className = 'visually-hidden';
announcer.setAttribute('role', 'status');
document.body.append(announcer);

/** @param {string} text */
function announce(text) {
  announcer.textContent = '';
  // A fresh text node after a tick, so the same message twice is announced twice.
  setTimeout(() => (announcer.textContent = text), 50);
}

/**
 * copy puts `text` on the clipboard; false when the browser refused.
 * @param {string} text
 * @returns {Promise<boolean>}
 */
async function copy(text) {
  if (navigator.clipboard && window.isSecureContext) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch {
      // Permission refused: try the older way below.
    }
  }
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.className = 'visually-hidden';
  document.body.append(area);
  area.select();
  let done;
  try {
    done = document.execCommand('copy');
  } catch {
    done = false;
  }
  area.remove();
  return done;
}

/**
 * copyFrom copies the link or the text of the entry `button` belongs to.
 * @param {HTMLElement} button
 * @param {'link' | 'text'} what
 */
export async function copyFrom(button, what) {
  const article = button.closest('.entry');
  if (!(article instanceof HTMLElement)) return;
  const text = what === 'link' ? (article.dataset.shareUrl ?? '') : plainText(one(article, '.entry-text', HTMLElement));
  const label = button.dataset.label || button.textContent || '';
  button.dataset.label = label;
  const ok = await copy(text);
  button.textContent = ok ? (what === 'link' ? 'Link copied' : 'Text copied') : 'Copy failed';
  announce(ok ? (what === 'link' ? 'The link to the entry is on the clipboard.' : 'The text is on the clipboard.') : 'Copying failed; select the text and copy it yourself.');
  clearTimeout(Number(button.dataset.timer));
  button.dataset.timer = String(setTimeout(() => (button.textContent = label), 2500));
}
