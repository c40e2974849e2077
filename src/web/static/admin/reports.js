// The report queue. The first page of open reports follows what happens without a reload: the page
// re-reads it every few seconds while it is in view, with If-None-Match, so an unchanged queue costs
// a 304; new reports appear, and reports resolved elsewhere leave, without moving the others.
import { api } from './api.js';
import { button, DATE, DATE_TIME, el, empty, entryQuote, say, stateTag } from './ui.js';
import { byId } from '../lib/dom.js';

/** How often the open queue is read again while the page is in view, in ms. */
export const QUEUE_POLL_MS = 2000;
const OPEN_QUEUE = '/api/v1/admin/reports?status=open';

/** @type {Record<string, string>} */
const reasonLabels = JSON.parse(document.body.dataset.reasonLabels || '{}');

/**
 * @typedef {object} AdminReport
 * @property {string} id
 * @property {string} reason
 * @property {string | null} details
 * @property {'open' | 'accepted' | 'dismissed'} status
 * @property {number} createdAt
 * @property {string | null} resolvedBy
 * @property {{ uuid: string, text: string, state: string, timestamp: number }} entry
 */

/**
 * The next page of the list shown, and whether more than its first page is shown.
 * @type {string | null}
 */
let reportNext = null;
let pagedOn = false;
/**
 * The ETag of the open queue's first page as last read, and whether a read is under way.
 * @type {string | null}
 */
let queueTag = null;
let polling = false;

/**
 * showCount puts the number of open reports on the tab: one page (100) is counted, beyond it "100+".
 * @param {AdminReport[]} open
 * @param {boolean} more
 */
function showCount(open, more) {
  const count = document.querySelector('[data-count="reports"]');
  if (count !== null) count.textContent = open.length > 0 ? `${open.length}${more ? '+' : ''}` : '';
}

/** @param {string} status */
function emptyText(status) {
  return status === 'open' ? 'No open reports. Nothing to do.' : `No ${status} reports.`;
}

/**
 * loadReports shows the first page of reports, or with `more` appends the page the last one linked to.
 * @param {boolean} more
 */
export async function loadReports(more) {
  const status = byId('report-status', HTMLSelectElement).value;
  const list = byId('report-list');
  const result = await api('GET', more && reportNext ? reportNext : `/api/v1/admin/reports?status=${encodeURIComponent(status)}`);
  if (!result.ok) return say(`The reports could not be loaded: ${result.detail}`, 'error');
  /** @type {AdminReport[]} */
  const reports = result.data;
  const cards = reports.map(reportCard);
  if (more) list.append(...cards);
  else if (cards.length === 0) empty(list, emptyText(status));
  else list.replaceChildren(...cards);
  if (!more && status === 'open') {
    queueTag = result.etag;
    showCount(reports, result.next !== null);
  }
  pagedOn = more;
  reportNext = result.next;
  byId('report-more').hidden = reportNext === null;
  if (more && cards.length > 0) cards[0].querySelector('button')?.focus();
}

/**
 * refreshQueue reads the open queue's first page again, unless it is unchanged (a 304): it updates
 * the tab's count and, when the open reports are shown, the list. `force` reads it whatever the ETag.
 * @param {boolean} [force]
 */
export async function refreshQueue(force = false) {
  if (polling) return;
  polling = true;
  try {
    const result = await api('GET', OPEN_QUEUE, undefined, undefined, !force && queueTag !== null ? { 'if-none-match': queueTag } : {});
    if (!result.ok) return;
    queueTag = result.etag;
    /** @type {AdminReport[]} */
    const reports = result.data;
    showCount(reports, result.next !== null);
    const shown = !byId('reports').hidden && byId('report-status', HTMLSelectElement).value === 'open';
    // Beyond the first page the list is the moderator's own reading; it stays until they reload it.
    if (shown && !pagedOn) mergeQueue(reports, result.next);
  } finally {
    polling = false;
  }
}

/**
 * mergeQueue makes the list show `reports` (the queue's first page) while keeping the cards that did
 * not change, so focus and reading place stay where they were.
 * @param {AdminReport[]} reports
 * @param {string | null} next
 */
function mergeQueue(reports, next) {
  const list = byId('report-list');
  /** @type {Map<string, HTMLElement>} */
  const cards = new Map();
  const wanted = new Set(reports.map((report) => report.id));
  for (const card of [...list.children]) {
    if (card instanceof HTMLElement && card.dataset.id !== undefined && wanted.has(card.dataset.id)) cards.set(card.dataset.id, card);
    else card.remove();
  }
  let at = list.firstElementChild;
  for (const report of reports) {
    let card = cards.get(report.id);
    if (card !== undefined && card.dataset.shows !== JSON.stringify(report)) {
      const fresh = reportCard(report);
      card.replaceWith(fresh);
      if (at === card) at = fresh;
      card = fresh;
    }
    card ??= reportCard(report);
    if (card !== at) list.insertBefore(card, at);
    at = card.nextElementSibling;
  }
  if (reports.length === 0) empty(list, emptyText('open'));
  reportNext = next;
  byId('report-more').hidden = reportNext === null;
}

/**
 * reportCard shows one report with its entry, and for an open one the buttons that resolve it.
 * @param {AdminReport} report
 * @returns {HTMLLIElement}
 */
function reportCard(report) {
  const meta = el(
    'p',
    { className: 'card-meta' },
    el('span', { className: 'tag tag-reason', textContent: reasonLabels[report.reason] || report.reason }),
    el('span', { textContent: `Reported ${DATE_TIME.format(new Date(report.createdAt * 1000))}` }),
    report.status !== 'open' ? el('span', { textContent: `${report.status === 'accepted' ? 'Accepted' : 'Dismissed'} by ${report.resolvedBy || 'unknown'}` }) : null,
  );
  const entryMeta = el(
    'p',
    { className: 'card-meta' },
    stateTag(report.entry.state),
    el('span', { textContent: `Added ${DATE.format(new Date(report.entry.timestamp * 1000))}` }),
    el('code', { textContent: report.entry.uuid }),
  );
  const card = el(
    'li',
    { className: `card${report.entry.state === 'hidden' ? ' is-hidden-entry' : ''}`, dataset: { id: report.id, shows: JSON.stringify(report) } },
    meta,
    entryQuote(report.entry.text),
    report.details ? el('p', { className: 'card-details' }, el('strong', { textContent: 'Details: ' }), report.details) : null,
    entryMeta,
  );
  if (report.status === 'open') {
    /** @param {'accept' | 'dismiss'} action */
    const act = (action) => async () => {
      const result = await api('POST', `/api/v1/admin/reports/${encodeURIComponent(report.id)}/${action}`);
      if (!result.ok) return say(`The report could not be ${action === 'accept' ? 'accepted' : 'dismissed'}: ${result.detail}`, 'error');
      say(action === 'accept' ? 'Report accepted: the entry is hidden.' : 'Report dismissed: the entry stays as it is.', 'success');
      await loadReports(false);
      byId('reports-title').focus();
    };
    card.append(el('div', { className: 'actions' }, button('Accept and hide entry', act('accept'), 'button-primary'), button('Dismiss', act('dismiss'))));
  }
  return card;
}

byId('report-status').addEventListener('change', () => void loadReports(false));
byId('report-more').addEventListener('click', () => void loadReports(true));
