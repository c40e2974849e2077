// The moderation page: signs in with an admin token and works through the admin JSON API. The token
// lives in sessionStorage (this tab only, gone when it closes) and travels as a Bearer header; it is
// never put in a URL or a cookie. Everything shown is built with createElement and textContent, never
// from markup: entry texts, report details and log records are untrusted input.
'use strict';

(function () {
  const TOKEN_KEY = 'nonsense-admin-token';
  const reasonLabels = JSON.parse(document.body.dataset.reasonLabels || '{}');
  const $ = (id) => document.getElementById(id);

  const signin = $('signin');
  const consoleView = $('console');
  const consoleMessage = $('console-message');
  const DATE = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeZone: 'UTC' });
  const DATE_TIME = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'short' });

  /** el creates an element: `props` sets properties (className, textContent, ...) and attributes (`attrs`). */
  function el(tag, props, ...children) {
    const element = document.createElement(tag);
    const { attrs, dataset, ...rest } = props || {};
    Object.assign(element, rest);
    for (const [name, value] of Object.entries(attrs || {})) element.setAttribute(name, value);
    Object.assign(element.dataset, dataset || {});
    for (const child of children) if (child !== null && child !== undefined && child !== false) element.append(child);
    return element;
  }

  function button(label, onClick, className) {
    const b = el('button', { type: 'button', className: `button button-small ${className || ''}`.trim(), textContent: label });
    b.addEventListener('click', onClick);
    return b;
  }

  function say(text, kind) {
    consoleMessage.textContent = text;
    consoleMessage.classList.toggle('is-error', kind === 'error');
    consoleMessage.classList.toggle('is-success', kind === 'success');
  }

  // ---- The API ----

  /** nextPage reads the `Link: <…>; rel="next"` header of a list page: the next page's path, or null. */
  function nextPage(response) {
    const match = /<([^>]*)>\s*;\s*rel="?next"?/.exec(response.headers.get('link') || '');
    if (!match) return null;
    // The service gives absolute links; the page asks its own origin, where it found the API.
    const url = new URL(match[1], location.href);
    return url.pathname + url.search;
  }

  /**
   * api sends one request with the token. It resolves to { ok, status, data, detail, next }: `detail`
   * is the problem+json detail of a failure, `next` the path of a list's next page (or null). A 401
   * ends the session: the token was revoked or is wrong.
   */
  async function api(method, path, body, contentType) {
    const headers = { authorization: `Bearer ${sessionStorage.getItem(TOKEN_KEY) || ''}`, accept: 'application/json' };
    let payload;
    if (body instanceof Blob) {
      payload = body;
      headers['content-type'] = contentType;
    } else if (body !== undefined) {
      payload = JSON.stringify(body);
      headers['content-type'] = 'application/json';
    }
    let response;
    try {
      response = await fetch(path, { method, headers, body: payload, cache: 'no-store' });
    } catch {
      return { ok: false, status: 0, data: null, detail: 'The service could not be reached. Check the connection and try again.' };
    }
    let data = null;
    if (response.status !== 204) {
      try {
        data = await response.json();
      } catch {
        data = null;
      }
    }
    const detail = response.ok ? '' : (data && typeof data.detail === 'string' ? data.detail : `The service answered ${response.status}.`);
    if (response.status === 401 && path.startsWith('/api/v1/admin/')) signOut(`Signed out: ${detail}`);
    return { ok: response.ok, status: response.status, data, detail, next: nextPage(response) };
  }

  // ---- Signing in and out ----

  function showConsole() {
    signin.hidden = true;
    consoleView.hidden = false;
    showTab(currentTab());
    refreshCounts();
  }

  function signOut(reason) {
    sessionStorage.removeItem(TOKEN_KEY);
    consoleView.hidden = true;
    signin.hidden = false;
    const message = $('signin-message');
    message.textContent = reason || '';
    message.classList.toggle('is-error', Boolean(reason));
    $('token').value = '';
    $('token').focus();
  }

  $('signin-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    const token = $('token').value.trim();
    const message = $('signin-message');
    message.classList.remove('is-error');
    message.textContent = 'Checking the token…';
    sessionStorage.setItem(TOKEN_KEY, token);
    const check = await api('GET', '/api/v1/admin/reports?status=open&limit=1');
    if (!check.ok) {
      sessionStorage.removeItem(TOKEN_KEY);
      message.textContent = `Not signed in: ${check.detail}`;
      message.classList.add('is-error');
      return;
    }
    message.textContent = '';
    $('who').textContent = 'Signed in.';
    showConsole();
    document.querySelector(`[data-tab="${currentTab()}"]`).focus();
  });

  $('signout').addEventListener('click', () => signOut('Signed out.'));

  // ---- Tabs: one section at a time, chosen by the address's #fragment ----

  const TABS = ['reports', 'entries', 'variables', 'emojis', 'log'];
  const loaders = {};

  function currentTab() {
    const name = location.hash.slice(1);
    return TABS.includes(name) ? name : 'reports';
  }

  function showTab(name) {
    for (const tab of TABS) {
      $(tab).hidden = tab !== name;
      const link = document.querySelector(`[data-tab="${tab}"]`);
      if (tab === name) link.setAttribute('aria-current', 'true');
      else link.removeAttribute('aria-current');
    }
    say('', null);
    loaders[name]();
  }

  window.addEventListener('hashchange', () => {
    if (!consoleView.hidden) showTab(currentTab());
  });

  async function refreshCounts() {
    const open = await api('GET', '/api/v1/admin/reports?status=open');
    // One page (100) is counted; beyond it the count says "100+".
    if (open.ok) document.querySelector('[data-count="reports"]').textContent = open.data.length > 0 ? `${open.data.length}${open.next ? '+' : ''}` : '';
  }

  function entryQuote(text) {
    return el('blockquote', { className: 'entry-text', textContent: text, attrs: { dir: 'auto' } });
  }

  function stateTag(state) {
    return el('span', { className: `tag${state === 'hidden' ? ' tag-hidden' : ''}`, textContent: state === 'hidden' ? 'Hidden' : 'Visible' });
  }

  function empty(list, text) {
    list.replaceChildren(el('li', { className: 'hint', textContent: text }));
  }

  // ---- Reports ----

  let reportNext = null;

  loaders.reports = () => loadReports(false);

  /** loadReports shows the first page of reports, or with `more` appends the page the last one linked to. */
  async function loadReports(more) {
    const status = $('report-status').value;
    const list = $('report-list');
    const result = await api('GET', more && reportNext ? reportNext : `/api/v1/admin/reports?status=${encodeURIComponent(status)}`);
    if (!result.ok) return say(`The reports could not be loaded: ${result.detail}`, 'error');
    const cards = result.data.map(reportCard);
    if (more) list.append(...cards);
    else if (cards.length === 0) empty(list, status === 'open' ? 'No open reports. Nothing to do.' : `No ${status} reports.`);
    else list.replaceChildren(...cards);
    reportNext = result.next;
    $('report-more').hidden = reportNext === null;
    if (more && cards.length > 0) cards[0].querySelector('button, a')?.focus();
  }

  $('report-status').addEventListener('change', () => loaders.reports());
  $('report-more').addEventListener('click', () => loadReports(true));

  function reportCard(report) {
    const meta = el(
      'p',
      { className: 'card-meta' },
      el('span', { className: 'tag tag-reason', textContent: reasonLabels[report.reason] || report.reason }),
      el('span', { textContent: `Reported ${DATE_TIME.format(new Date(report.createdAt * 1000))}` }),
      report.status !== 'open'
        ? el('span', { textContent: `${report.status === 'accepted' ? 'Accepted' : 'Dismissed'} by ${report.resolvedBy || 'unknown'}` })
        : null,
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
      { className: `card${report.entry.state === 'hidden' ? ' is-hidden-entry' : ''}` },
      meta,
      entryQuote(report.entry.text),
      report.details ? el('p', { className: 'card-details' }, el('strong', { textContent: 'Details: ' }), report.details) : null,
      entryMeta,
    );
    if (report.status === 'open') {
      const act = (action) => async () => {
        const result = await api('POST', `/api/v1/admin/reports/${encodeURIComponent(report.id)}/${action}`);
        if (!result.ok) return say(`The report could not be ${action === 'accept' ? 'accepted' : 'dismissed'}: ${result.detail}`, 'error');
        say(action === 'accept' ? 'Report accepted: the entry is hidden.' : 'Report dismissed: the entry stays as it is.', 'success');
        await loaders.reports();
        await refreshCounts();
        $('reports-title').focus();
      };
      card.append(
        el(
          'div',
          { className: 'actions' },
          button('Accept and hide entry', act('accept'), 'button-primary'),
          button('Dismiss', act('dismiss')),
        ),
      );
    }
    return card;
  }

  // ---- Entries ----

  let entryNext = null;

  loaders.entries = () => searchEntries(false);

  async function searchEntries(more) {
    const q = $('entry-q').value.trim();
    const state = $('entry-state').value || 'any';
    const params = new URLSearchParams({ q, state, limit: '20' });
    // The next page is the one the last page's Link header named.
    const result = await api('GET', more && entryNext ? entryNext : `/api/v1/admin/nonsense?${params}`);
    if (!result.ok) return say(`The entries could not be loaded: ${result.detail}`, 'error');
    const list = $('entry-list');
    const cards = result.data.map(entryCard);
    if (more) list.append(...cards);
    else if (cards.length === 0) empty(list, 'No entries match.');
    else list.replaceChildren(...cards);
    entryNext = result.next;
    $('entry-more').hidden = entryNext === null;
    if (more && cards.length > 0) cards[0].querySelector('button').focus();
  }

  $('entry-search').addEventListener('submit', (event) => {
    event.preventDefault();
    searchEntries(false);
  });
  $('entry-more').addEventListener('click', () => searchEntries(true));

  function entryCard(entry) {
    const card = el('li', { className: 'card', dataset: { uuid: entry.uuid } });
    render(entry);
    return card;

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
      if (await patch({ state: hide ? 'hidden' : 'visible' }, hide ? 'Entry hidden.' : 'Entry visible again.')) card.querySelectorAll('button')[1].focus();
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
            card.querySelector('button').focus();
          }),
        ),
      );
      form.addEventListener('submit', async (event) => {
        event.preventDefault();
        if (await patch({ text: area.value }, 'Entry saved.')) card.querySelector('button').focus();
      });
      card.replaceChildren(card.firstChild, form);
      area.focus();
    }

    async function remove() {
      if (!window.confirm('Delete this entry for good, with the reports on it? Hiding it can be undone; deleting cannot.')) return;
      const result = await api('DELETE', `/api/v1/admin/nonsense/${entry.uuid}`);
      if (!result.ok) return say(`The entry was not deleted: ${result.detail}`, 'error');
      card.remove();
      say('Entry deleted.', 'success');
      $('entries-title').focus();
    }
  }

  $('entry-add').addEventListener('submit', async (event) => {
    event.preventDefault();
    const text = $('entry-text');
    const result = await api('POST', '/api/v1/admin/nonsense', { text: text.value });
    if (!result.ok) return say(`The entry was not added: ${result.detail}`, 'error');
    text.value = '';
    const list = $('entry-list');
    if (list.firstElementChild && !list.firstElementChild.classList.contains('card')) list.replaceChildren();
    list.prepend(entryCard(result.data));
    say('Entry added. It is visible now.', 'success');
  });

  // ---- Variables ----

  loaders.variables = async () => {
    const response = await fetch('/api/v1/variables', { cache: 'no-store' });
    const list = $('variable-list');
    if (!response.ok) return say('The variables could not be loaded.', 'error');
    const variables = await response.json();
    list.replaceChildren(...variables.map(variableCard));
  };

  function variableCard(variable) {
    const card = el(
      'li',
      { className: 'card' },
      el(
        'p',
        { className: 'card-meta' },
        el('code', { textContent: variable.name }),
        el('span', { className: 'tag', textContent: variable.scope === 'server' ? 'Server' : 'Client' }),
      ),
      el('p', { className: 'card-details', textContent: variable.description }),
      variable.scope === 'server'
        ? el('p', { className: 'values', textContent: `${variable.values.length} values: ${variable.values.join(' · ')}` })
        : el('p', { className: 'values', textContent: 'Left in the text for clients; this site shows a neutral word.' }),
    );
    if (variable.scope === 'server') {
      card.append(
        el(
          'div',
          { className: 'actions' },
          button('Edit', () => {
            $('variable-name').value = variable.name;
            $('variable-description').value = variable.description;
            $('variable-values').value = variable.values.join('\n');
            $('variable-values').focus();
          }),
          button(
            'Delete',
            async () => {
              if (!window.confirm(`Delete ${variable.name}? Entries that use it will show it as plain text.`)) return;
              const result = await api('DELETE', `/api/v1/admin/variables/${encodeURIComponent(variable.name)}`);
              if (!result.ok) return say(`The variable was not deleted: ${result.detail}`, 'error');
              say(`${variable.name} deleted.`, 'success');
              await loaders.variables();
              $('variables-title').focus();
            },
            'button-danger',
          ),
        ),
      );
    }
    return card;
  }

  $('variable-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    const name = $('variable-name').value.trim();
    const values = $('variable-values')
      .value.split('\n')
      .map((value) => value.trim())
      .filter((value) => value !== '');
    const result = await api('PUT', `/api/v1/admin/variables/${encodeURIComponent(name)}`, { description: $('variable-description').value, values });
    if (!result.ok) return say(`The variable was not saved: ${result.detail}`, 'error');
    say(`${name} ${result.status === 201 ? 'added' : 'saved'}.`, 'success');
    event.target.reset();
    await loaders.variables();
  });

  // ---- Emojis ----

  loaders.emojis = async () => {
    const response = await fetch('/api/v1/emojis', { cache: 'no-store' });
    const list = $('emoji-list');
    if (!response.ok) return say('The emojis could not be loaded.', 'error');
    const emojis = await response.json();
    if (emojis.length === 0) return empty(list, 'No custom emojis yet.');
    // The images may be cached for an hour; a fresh query string shows a replaced image at once.
    const fresh = Date.now();
    list.replaceChildren(
      ...emojis.map((emoji) =>
        el(
          'li',
          { className: 'card' },
          el('img', { src: `${new URL(emoji.url, location.href).pathname}?v=${fresh}`, alt: emoji.code, width: 64, height: 64 }),
          el('code', { textContent: emoji.code }),
          button(
            'Delete',
            async () => {
              if (!window.confirm(`Delete ${emoji.code}? Entries that use it will show the code as text.`)) return;
              const result = await api('DELETE', `/api/v1/admin/emojis/${encodeURIComponent(emoji.name)}`);
              if (!result.ok) return say(`The emoji was not deleted: ${result.detail}`, 'error');
              say(`${emoji.code} deleted.`, 'success');
              await loaders.emojis();
              $('emojis-title').focus();
            },
            'button-danger',
          ),
        ),
      ),
    );
  };

  $('emoji-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    const name = $('emoji-name').value.trim();
    const file = $('emoji-file').files[0];
    if (!file) return say('Choose an image file.', 'error');
    const result = await api('PUT', `/api/v1/admin/emojis/${encodeURIComponent(name)}`, file, file.type || 'application/octet-stream');
    if (!result.ok) return say(`The emoji was not saved: ${result.detail}`, 'error');
    say(`:${name}: ${result.status === 201 ? 'added' : 'replaced'}.`, 'success');
    event.target.reset();
    await loaders.emojis();
  });

  // ---- The moderation log ----

  let logBefore = null;

  loaders.log = () => loadLog(false);

  async function loadLog(more) {
    const params = new URLSearchParams({ limit: '50' });
    if (more && logBefore !== null) params.set('before', String(logBefore));
    const result = await api('GET', `/api/v1/admin/log?${params}`);
    if (!result.ok) return say(`The log could not be loaded: ${result.detail}`, 'error');
    const rows = result.data.map((record) =>
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
    const body = $('log-rows');
    if (more) body.append(...rows);
    else if (rows.length === 0) body.replaceChildren(el('tr', {}, el('td', { colSpan: 5, className: 'hint', textContent: 'Nothing has been changed yet.' })));
    else body.replaceChildren(...rows);
    logBefore = result.data.length === 50 ? result.data[result.data.length - 1].id : null;
    $('log-more').hidden = logBefore === null;
  }

  $('log-more').addEventListener('click', () => loadLog(true));

  // Headings receive focus after an action removes the element that had it.
  for (const tab of TABS) $(`${tab}-title`).tabIndex = -1;

  if (sessionStorage.getItem(TOKEN_KEY)) {
    $('who').textContent = 'Signed in.';
    showConsole();
  }
})();
