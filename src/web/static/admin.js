// The moderation page: signs in with an admin token and works through the admin JSON API
// (admin/api.js keeps the token). One section at a time, chosen by the address's #fragment.
import { api, onUnauthorized, TOKEN_KEY } from './admin/api.js';
import { loadEmojis, loadVariables } from './admin/catalog.js';
import { searchEntries } from './admin/entries.js';
import { loadLog } from './admin/log.js';
import { loadReports, QUEUE_POLL_MS, refreshQueue } from './admin/reports.js';
import { say } from './admin/ui.js';
import { byId } from './lib/dom.js';

const signin = byId('signin');
const consoleView = byId('console');
const tokenInput = byId('token', HTMLInputElement);
const signinMessage = byId('signin-message');

/** @type {Record<string, () => unknown>} */
const loaders = {
  reports: () => loadReports(false),
  entries: () => searchEntries(false),
  variables: loadVariables,
  emojis: loadEmojis,
  log: () => loadLog(false),
};
const TABS = Object.keys(loaders);

/** @type {ReturnType<typeof setInterval> | null} */
let queueTimer = null;

function showConsole() {
  signin.hidden = true;
  consoleView.hidden = false;
  showTab(currentTab());
  void refreshQueue(true);
  // The queue follows new and resolved reports while the page is in view (admin/reports.js).
  queueTimer ??= setInterval(() => {
    if (document.visibilityState === 'visible') void refreshQueue();
  }, QUEUE_POLL_MS);
}

/** @param {string} [reason] */
function signOut(reason) {
  sessionStorage.removeItem(TOKEN_KEY);
  if (queueTimer !== null) clearInterval(queueTimer);
  queueTimer = null;
  consoleView.hidden = true;
  signin.hidden = false;
  signinMessage.textContent = reason || '';
  signinMessage.classList.toggle('is-error', Boolean(reason));
  tokenInput.value = '';
  tokenInput.focus();
}

onUnauthorized((detail) => signOut(`Signed out: ${detail}`));

byId('signin-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const token = tokenInput.value.trim();
  signinMessage.classList.remove('is-error');
  signinMessage.textContent = 'Checking the token…';
  sessionStorage.setItem(TOKEN_KEY, token);
  const check = await api('GET', '/api/v1/admin/reports?status=open&limit=1');
  if (!check.ok) {
    sessionStorage.removeItem(TOKEN_KEY);
    signinMessage.textContent = `Not signed in: ${check.detail}`;
    signinMessage.classList.add('is-error');
    return;
  }
  signinMessage.textContent = '';
  byId('who').textContent = 'Signed in.';
  showConsole();
  tabLink(currentTab())?.focus();
});

byId('signout').addEventListener('click', () => signOut('Signed out.'));

/** @param {string} name */
function tabLink(name) {
  const link = document.querySelector(`[data-tab="${name}"]`);
  return link instanceof HTMLElement ? link : null;
}

function currentTab() {
  const name = location.hash.slice(1);
  return TABS.includes(name) ? name : 'reports';
}

/** @param {string} name */
function showTab(name) {
  for (const tab of TABS) {
    byId(tab).hidden = tab !== name;
    if (tab === name) tabLink(tab)?.setAttribute('aria-current', 'true');
    else tabLink(tab)?.removeAttribute('aria-current');
  }
  say('', null);
  void loaders[name]();
}

window.addEventListener('hashchange', () => {
  if (!consoleView.hidden) showTab(currentTab());
});

// A page brought back into view reads the queue at once rather than at the next tick.
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'visible' && queueTimer !== null) void refreshQueue();
});

// Headings receive focus after an action removes the element that had it.
for (const tab of TABS) byId(`${tab}-title`).tabIndex = -1;

if (sessionStorage.getItem(TOKEN_KEY)) {
  byId('who').textContent = 'Signed in.';
  showConsole();
}
