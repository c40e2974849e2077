// Building the moderation page's lists. Everything shown is built with createElement and textContent,
// never from markup: entry texts, report details and log records are untrusted input.
import { byId } from '../lib/dom.js';

export const DATE = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeZone: 'UTC' });
export const DATE_TIME = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'short' });

/** @typedef {Node | string | null | undefined | false} Child */

/**
 * el creates an element: `props` sets properties (className, textContent, ...), attributes (`attrs`)
 * and data attributes (`dataset`).
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, unknown> & { attrs?: Record<string, string>, dataset?: Record<string, string> }} [props]
 * @param {...Child} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function el(tag, props, ...children) {
  const element = document.createElement(tag);
  const { attrs, dataset, ...rest } = props || {};
  Object.assign(element, rest);
  for (const [name, value] of Object.entries(attrs || {})) element.setAttribute(name, value);
  Object.assign(element.dataset, dataset || {});
  for (const child of children) if (child !== null && child !== undefined && child !== false) element.append(child);
  return element;
}

/**
 * button creates a small button that calls `onClick`.
 * @param {string} label
 * @param {(event: MouseEvent) => unknown} onClick
 * @param {string} [className]
 * @returns {HTMLButtonElement}
 */
export function button(label, onClick, className) {
  const b = el('button', { type: 'button', className: `button button-small ${className || ''}`.trim(), textContent: label });
  b.addEventListener('click', onClick);
  return b;
}

/**
 * say shows a message above the sections: a confirmation, an error, or nothing.
 * @param {string} text
 * @param {'error' | 'success' | null} kind
 */
export function say(text, kind) {
  const message = byId('console-message');
  message.textContent = text;
  message.classList.toggle('is-error', kind === 'error');
  message.classList.toggle('is-success', kind === 'success');
}

/** @param {string} text */
export function entryQuote(text) {
  return el('blockquote', { className: 'entry-text', textContent: text, attrs: { dir: 'auto' } });
}

/** @param {string} state */
export function stateTag(state) {
  return el('span', { className: `tag${state === 'hidden' ? ' tag-hidden' : ''}`, textContent: state === 'hidden' ? 'Hidden' : 'Visible' });
}

/**
 * empty replaces a list's items with one line saying it is empty.
 * @param {HTMLElement} list
 * @param {string} text
 */
export function empty(list, text) {
  list.replaceChildren(el('li', { className: 'hint', textContent: text }));
}
