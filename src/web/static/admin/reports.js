// The report queue: reports with their entries, accepted or dismissed a card at a time.
import { api } from './api.js';
import { button, DATE, DATE_TIME, el, empty, entryQuote, say, stateTag } from './ui.js';
import { byId } from '../lib/dom.js';

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

/** @type {string | null} */
let reportNext = null;
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
  if (!more && status === 'open') showCount(reports, result.next !== null);
  reportNext = result.next;
  byId('report-more').hidden = reportNext === null;
  if (more && cards.length > 0) cards[0].querySelector('button')?.focus();
}

/** refreshCounts puts the number of open reports on the tab. */
export async function refreshCounts() {
  const result = await api('GET', OPEN_QUEUE);
  if (result.ok) showCount(result.data, result.next !== null);
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
