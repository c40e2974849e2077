// The reader's pages, enhanced: "Another one" without a reload, copying a link or a text, and the
// report dialog. Every page works without this script (links and a plain form), so it only adds.
// Entry texts are untrusted: they only ever reach the page as text nodes (textContent), never as
// markup, and emoji images are created as elements with a known-safe name.
'use strict';

(function () {
  const clientWords = JSON.parse(document.body.dataset.clientWords || '{}');
  const CLIENT_TOKEN = /\$AUTHOR\$|\$SERVER\$|\$CHANNEL\$|\$\{app_name\}/g;
  // The emoji name grammar, as the server states it (domain/emojis.ts).
  const EMOJI_AT = new RegExp(`:(${document.body.dataset.emojiName}):`, 'y');

  // A polite live region for short confirmations ("Link copied").
  const announcer = document.createElement('p');
  announcer.className = 'visually-hidden';
  announcer.setAttribute('role', 'status');
  document.body.append(announcer);
  function announce(text) {
    announcer.textContent = '';
    // A fresh text node after a tick, so the same message twice is announced twice.
    setTimeout(() => (announcer.textContent = text), 50);
  }

  const { problemDetail } = window.nonsenseSite;

  // ---- Rendering an entry from the JSON API, the way the server renders it ----

  let emojiFiles = null;
  /** The custom emojis by name, with same-origin image paths (the CSP allows only 'self'). */
  async function loadEmojis() {
    if (emojiFiles !== null) return emojiFiles;
    const response = await fetch('/api/v1/emojis', { headers: { accept: 'application/json' } });
    if (!response.ok) return new Map();
    const list = await response.json();
    emojiFiles = new Map(list.map((emoji) => [emoji.name, new URL(emoji.url, location.href).pathname]));
    return emojiFiles;
  }

  /** fillText puts `text` into `element`: text nodes, and <img> for each known `:name:`. */
  function fillText(element, text, emojis) {
    element.replaceChildren();
    let copiedUpTo = 0;
    let at = text.indexOf(':');
    // The same scan as the server's: the grammar is tried at every colon, so an unknown `:word:`
    // does not hide a known emoji that shares its closing colon.
    while (at !== -1) {
      EMOJI_AT.lastIndex = at;
      const match = EMOJI_AT.exec(text);
      if (match && emojis.has(match[1])) {
        element.append(document.createTextNode(text.slice(copiedUpTo, at)));
        const image = document.createElement('img');
        image.className = 'emoji';
        image.src = emojis.get(match[1]);
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

  /** plainText reads an entry's text back, emojis as their codes. */
  function plainText(element) {
    let text = '';
    for (const node of element.childNodes) {
      if (node.nodeType === Node.TEXT_NODE) text += node.data;
      else if (node.nodeName === 'IMG') text += node.getAttribute('alt') || '';
      else text += node.textContent;
    }
    return text;
  }

  const DATE = new Intl.DateTimeFormat('en-GB', { dateStyle: 'long', timeZone: 'UTC' });

  /** showEntry replaces the entry of `article` with `entry` (as the API delivers it). */
  async function showEntry(article, entry) {
    const emojis = await loadEmojis();
    const previous = article.dataset.uuid;
    // The site resolves the client-side variables the API leaves in the text, in one pass.
    const text = entry.nonsense.replace(CLIENT_TOKEN, (token) => clientWords[token] ?? token);
    fillText(article.querySelector('.entry-text'), text, emojis);
    article.dataset.uuid = entry.uuid;
    article.dataset.shareUrl = article.dataset.shareUrl.replace(previous, entry.uuid);
    const time = article.querySelector('time');
    time.dateTime = new Date(entry.timestamp * 1000).toISOString();
    time.textContent = DATE.format(new Date(entry.timestamp * 1000));
    for (const link of article.querySelectorAll('a[href]')) {
      link.href = link.getAttribute('href').replace(previous, entry.uuid);
      if (link.hasAttribute('download')) link.setAttribute('download', `nonsense-${entry.uuid}.png`);
    }
  }

  async function another(button) {
    const stage = document.getElementById('stage');
    const article = stage && stage.querySelector('.entry');
    if (!article) return false;
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

  let pageMessage = null;
  function showPageMessage(text) {
    if (pageMessage === null) {
      pageMessage = document.createElement('p');
      pageMessage.className = 'message is-error';
      pageMessage.setAttribute('role', 'alert');
      const stage = document.getElementById('stage');
      stage.after(pageMessage);
    }
    pageMessage.textContent = text;
  }
  function hidePageMessage() {
    if (pageMessage !== null) pageMessage.textContent = '';
  }

  // ---- Copying ----

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
    let done = false;
    try {
      done = document.execCommand('copy');
    } catch {
      done = false;
    }
    area.remove();
    return done;
  }

  async function copyFrom(button, what) {
    const article = button.closest('.entry');
    const text = what === 'link' ? article.dataset.shareUrl : plainText(article.querySelector('.entry-text'));
    const label = button.dataset.label || button.textContent;
    button.dataset.label = label;
    const ok = await copy(text);
    button.textContent = ok ? (what === 'link' ? 'Link copied' : 'Text copied') : 'Copy failed';
    announce(ok ? (what === 'link' ? 'The link to the entry is on the clipboard.' : 'The text is on the clipboard.') : 'Copying failed; select the text and copy it yourself.');
    clearTimeout(Number(button.dataset.timer));
    button.dataset.timer = String(setTimeout(() => (button.textContent = label), 2500));
  }

  // ---- The report dialog ----

  const dialog = document.getElementById('report-dialog');
  const form = document.getElementById('report-form');
  const message = document.getElementById('report-message');
  let reportedUuid = null;
  let opener = null;

  function setMessage(text, kind) {
    message.textContent = text;
    message.classList.toggle('is-error', kind === 'error');
    message.classList.toggle('is-success', kind === 'success');
  }

  function openReport(link) {
    const article = link.closest('.entry');
    if (!dialog || !article || typeof dialog.showModal !== 'function') return false;
    reportedUuid = article.dataset.uuid;
    opener = link;
    form.reset();
    form.action = `/nonsense/${reportedUuid}/report`;
    setMessage('', null);
    form.querySelector('[type=submit]').disabled = false;
    form.querySelector('[type=submit]').hidden = false;
    form.querySelector('[data-action=close-dialog]').textContent = 'Cancel';
    const preview = document.getElementById('report-preview');
    preview.replaceChildren(...Array.from(article.querySelector('.entry-text').childNodes, (node) => node.cloneNode(true)));
    dialog.showModal();
    return true;
  }

  if (dialog) {
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
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const data = new FormData(form);
      const reason = data.get('reason');
      if (!reason) {
        setMessage('Choose a reason.', 'error');
        return;
      }
      const submit = form.querySelector('[type=submit]');
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
          const close = form.querySelector('[data-action=close-dialog]');
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
    });
  }

  // ---- One listener for every action on the page ----

  for (const button of document.querySelectorAll('[data-action=copy-link], [data-action=copy-text]')) button.hidden = false;

  document.addEventListener('click', async (event) => {
    const target = event.target instanceof Element ? event.target.closest('[data-action]') : null;
    if (target === null || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    switch (target.dataset.action) {
      case 'another':
        event.preventDefault();
        if (!(await another(target))) location.assign(target.href);
        break;
      case 'copy-link':
        await copyFrom(target, 'link');
        break;
      case 'copy-text':
        await copyFrom(target, 'text');
        break;
      case 'report':
        if (openReport(target)) event.preventDefault();
        break;
      case 'close-dialog':
        dialog.close();
        break;
    }
  });
})();
