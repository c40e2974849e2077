// The moderation log, newest first, fifty records at a time.
import { api } from './api.js';
import { DATE_TIME, el, say } from './ui.js';
import { byId } from '../lib/dom.js';

const PAGE = 50;
/** @typedef {{ id: number, at: number, actor: string, action: string, target: string, details: unknown }} LogRecord */

/** @type {number | null} */
let logBefore = null;

/**
 * loadLog shows the newest records, or with `more` appends the older ones after those shown.
 * @param {boolean} more
 */
export async function loadLog(more) {
  const params = new URLSearchParams({ limit: String(PAGE) });
  if (more && logBefore !== null) params.set('before', String(logBefore));
  const result = await api('GET', `/api/v1/admin/log?${params}`);
  if (!result.ok) return say(`The log could not be loaded: ${result.detail}`, 'error');
  /** @type {LogRecord[]} */
  const records = result.data;
  const rows = records.map((record) =>
    el(
      'tr',
      {},
      el('td', {}, el('time', { dateTime: new Date(record.at * 1000).toISOString(), textContent: DATE_TIME.format(new Date(record.at * 1000)) })),
      el('td', { textContent: record.actor }),
      el('td', {}, el('code', { textContent: record.action })),
      el('td', {}, el('code', { textContent: record.target })),
      el('td', { textContent: record.details === null ? '' : JSON.stringify(record.details) }),
    ),
  );
  const body = byId('log-rows');
  if (more) body.append(...rows);
  else if (rows.length === 0) body.replaceChildren(el('tr', {}, el('td', { colSpan: 5, className: 'hint', textContent: 'Nothing has been changed yet.' })));
  else body.replaceChildren(...rows);
  logBefore = records.length === PAGE ? records[records.length - 1].id : null;
  byId('log-more').hidden = logBefore === null;
}

byId('log-more').addEventListener('click', () => void loadLog(true));
