// The report dialog: a reader reports an entry without leaving the page (the link opens the report
// page when the browser has no <dialog>, or the page none).
import { one } from '../lib/dom.js';
import { problemDetail } from '../lib/problem.js';

const dialog = document.getElementById('report-dialog');
const form = document.getElementById('report-form');
const message = document.getElementById('report-message');
/** @type {string | null} */
let reportedUuid = null;
/** @type {HTMLElement | null} */
let opener = null;

/**
 * @param {string} text
 * @param {'error' | 'success' | null} kind
 */
function setMessage(text, kind) {
  if (message === null) return;
  message.textContent = text;
  message.classList.toggle('is-error', kind === 'error');
  message.classList.toggle('is-success', kind === 'success');
}

/**
 * openReport opens the dialog for the entry `link` belongs to; false when there is no dialog to open.
 * @param {HTMLElement} link
 * @returns {boolean}
 */
export function openReport(link) {
  const article = link.closest('.entry');
  if (!(dialog instanceof HTMLDialogElement) || !(form instanceof HTMLFormElement) || !(article instanceof HTMLElement) || typeof dialog.showModal !== 'function') return false;
  reportedUuid = article.dataset.uuid ?? null;
  opener = link;
  form.reset();
  form.action = `/nonsense/${reportedUuid}/report`;
  setMessage('', null);
  const submit = one(form, '[type=submit]', HTMLButtonElement);
  submit.disabled = false;
  submit.hidden = false;
  one(form, '[data-action=close-dialog]', HTMLElement).textContent = 'Cancel';
  const preview = one(document, '#report-preview', HTMLElement);
  preview.replaceChildren(...Array.from(one(article, '.entry-text', HTMLElement).childNodes, (node) => node.cloneNode(true)));
  dialog.showModal();
  return true;
}

/** closeReport closes the dialog. */
export function closeReport() {
  if (dialog instanceof HTMLDialogElement) dialog.close();
}

/**
 * send posts the report; the dialog then thanks the reader, or says why it was not taken.
 * @param {HTMLFormElement} form
 */
async function send(form) {
  const data = new FormData(form);
  const reason = data.get('reason');
  if (!reason) {
    setMessage('Choose a reason.', 'error');
    return;
  }
  const submit = one(form, '[type=submit]', HTMLButtonElement);
  submit.disabled = true;
  setMessage('Sending…', null);
  const details = String(data.get('details') || '').trim();
  try {
    const response = await fetch('/api/v1/nonsense/report', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(details ? { entryUuid: reportedUuid, reason, details } : { entryUuid: reportedUuid, reason }),
    });
    if (response.status === 201) {
      setMessage('Thank you. Your report was sent; moderators will look at it.', 'success');
      submit.hidden = true;
      const close = one(form, '[data-action=close-dialog]', HTMLElement);
      close.textContent = 'Close';
      close.focus();
      return;
    }
    const detail = await problemDetail(response);
    setMessage(response.status === 429 ? `Not sent: ${detail}` : `The report was not accepted: ${detail}`, 'error');
  } catch {
    setMessage('The service could not be reached. Check the connection and try again.', 'error');
  }
  submit.disabled = false;
}

if (dialog instanceof HTMLDialogElement && form instanceof HTMLFormElement) {
  dialog.addEventListener('close', () => {
    if (opener) opener.focus();
  });
  // A click on the backdrop (outside the dialog's box) closes it, as people expect of a modal.
  dialog.addEventListener('click', (event) => {
    if (event.target === dialog) {
      const box = dialog.getBoundingClientRect();
      const inside = event.clientX >= box.left && event.clientX <= box.right && event.clientY >= box.top && event.clientY <= box.bottom;
      if (!inside) dialog.close();
    }
  });
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void send(form);
  });
}
