/**
 * `GET /admin`: the moderation page. The server sends only the frame; the page script signs in with a
 * token (kept in sessionStorage) and does everything through the admin JSON API, building the lists
 * with textContent only, so no entry text is ever parsed as markup.
 */
import type { FastifyPluginAsync } from 'fastify';
import { EMOJI_NAME_SOURCE } from '../../domain/emojis.ts';
import { REPORT_REASONS } from '../../domain/reports.ts';
import { REASON_LABELS } from '../../web/components.ts';
import { clientWords } from '../../web/entry-text.ts';
import { html } from '../../web/html.ts';
import { page, sendPage } from '../../web/layout.ts';

const TABS = [
  ['reports', 'Reports'],
  ['entries', 'Entries'],
  ['variables', 'Variables'],
  ['emojis', 'Emojis'],
  ['log', 'Log'],
] as const;

const adminPageRoutes: FastifyPluginAsync = async (app) => {
  const { appName } = app.config;

  app.get('/admin', { schema: { hide: true } }, async (request, reply) => {
    const main = html`<h1>Moderation</h1>
<noscript><p class="notice notice-error">The moderation page needs JavaScript. The admin API under /api/v1/admin works with any HTTP client.</p></noscript>

<section id="signin" class="panel signin" aria-labelledby="signin-title">
<h2 id="signin-title">Sign in</h2>
<form id="signin-form" class="stack">
<div class="field">
<label for="token">Admin token</label>
<input type="password" id="token" name="token" required autocomplete="current-password" spellcheck="false" aria-describedby="token-hint">
<p class="hint" id="token-hint">Create one with <code>nonsense token create &lt;label&gt;</code>. It is kept in this tab only, until you sign out or close it.</p>
</div>
<p class="message" id="signin-message" role="status" aria-live="polite"></p>
<div><button class="button button-primary" type="submit">Sign in</button></div>
</form>
</section>

<div id="console" hidden>
<div class="console-bar">
<nav class="tabs" aria-label="Moderation sections">
<ul>
${TABS.map(([id, label]) => html`<li><a href="#${id}" data-tab="${id}">${label}<span class="count" data-count="${id}"></span></a></li>`)}
</ul>
</nav>
<p class="who"><span id="who"></span> <button class="button button-small" type="button" id="signout">Sign out</button></p>
</div>
<p class="message console-message" id="console-message" role="status" aria-live="polite"></p>

<section id="reports" class="tab-panel" aria-labelledby="reports-title" hidden>
<div class="panel-head">
<h2 id="reports-title">Reports</h2>
<div class="field field-inline">
<label for="report-status">Show</label>
<select id="report-status">
<option value="open">Open</option>
<option value="accepted">Accepted</option>
<option value="dismissed">Dismissed</option>
</select>
</div>
</div>
<p class="hint">Accepting a report hides its entry at once, together with the other open reports on it.</p>
<ul class="cards" id="report-list" aria-live="polite"></ul>
<p><button class="button" type="button" id="report-more" hidden>Load more</button></p>
</section>

<section id="entries" class="tab-panel" aria-labelledby="entries-title" hidden>
<div class="panel-head"><h2 id="entries-title">Entries</h2></div>
<form id="entry-search" class="search-form search-form-short" role="search" aria-label="Entries in any state">
<div class="field field-term"><label for="entry-q">Text contains</label><input type="search" id="entry-q" name="q" maxlength="200" autocomplete="off"></div>
<div class="field"><label for="entry-state">State</label>
<select id="entry-state" name="state"><option value="">Any</option><option value="visible">Visible</option><option value="hidden">Hidden</option></select></div>
<div class="field field-submit"><button class="button button-primary" type="submit">Search</button></div>
</form>
<ul class="cards" id="entry-list"></ul>
<p><button class="button" type="button" id="entry-more" hidden>Load more</button></p>
<form id="entry-add" class="panel stack" aria-labelledby="entry-add-title">
<h3 id="entry-add-title">Add an entry</h3>
<div class="field">
<label for="entry-text">Text</label>
<textarea id="entry-text" name="text" rows="3" maxlength="2000" required aria-describedby="entry-text-hint"></textarea>
<p class="hint" id="entry-text-hint">Up to 2,000 characters. Variables such as <code>$ANIMAL$</code> and emoji codes such as <code>:toast:</code> are kept as written.</p>
</div>
<div><button class="button button-primary" type="submit">Add entry</button></div>
</form>
</section>

<section id="variables" class="tab-panel" aria-labelledby="variables-title" hidden>
<div class="panel-head"><h2 id="variables-title">Variables</h2></div>
<ul class="cards" id="variable-list"></ul>
<form id="variable-form" class="panel stack" aria-labelledby="variable-form-title">
<h3 id="variable-form-title">Add or replace a server variable</h3>
<div class="field"><label for="variable-name">Name</label><input id="variable-name" name="name" required pattern="\\$[A-Z][A-Z0-9_]*\\$|\\$\\{[a-z][a-z0-9_]*\\}" placeholder="$ANIMAL$" spellcheck="false" aria-describedby="variable-name-hint">
<p class="hint" id="variable-name-hint"><code>$NAME$</code> (A–Z, 0–9, _) or <code>\${name}</code> (a–z, 0–9, _).</p></div>
<div class="field"><label for="variable-description">Description</label><input id="variable-description" name="description" maxlength="500"></div>
<div class="field"><label for="variable-values">Values, one a line</label><textarea id="variable-values" name="values" rows="5" required></textarea></div>
<div><button class="button button-primary" type="submit">Save variable</button></div>
</form>
</section>

<section id="emojis" class="tab-panel" aria-labelledby="emojis-title" hidden>
<div class="panel-head"><h2 id="emojis-title">Emojis</h2></div>
<ul class="emoji-grid" id="emoji-list"></ul>
<form id="emoji-form" class="panel stack" aria-labelledby="emoji-form-title">
<h3 id="emoji-form-title">Upload an emoji</h3>
<div class="field"><label for="emoji-name">Name</label><input id="emoji-name" name="name" required pattern="${EMOJI_NAME_SOURCE}" placeholder="blobcat" spellcheck="false" aria-describedby="emoji-name-hint">
<p class="hint" id="emoji-name-hint">2 to 32 of a–z, 0–9 and _; texts use it as <code>:name:</code>. An existing name is replaced.</p></div>
<div class="field"><label for="emoji-file">Image</label><input type="file" id="emoji-file" name="file" required accept="image/png,image/gif,image/webp" aria-describedby="emoji-file-hint">
<p class="hint" id="emoji-file-hint">PNG, GIF or WebP, at most 256 KiB and 1024 pixels a side.</p></div>
<div><button class="button button-primary" type="submit">Upload</button></div>
</form>
</section>

<section id="log" class="tab-panel" aria-labelledby="log-title" hidden>
<div class="panel-head"><h2 id="log-title">Moderation log</h2></div>
<div class="table-wrap">
<table class="log-table">
<caption class="visually-hidden">Newest first</caption>
<thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">Action</th><th scope="col">What</th><th scope="col">Details</th></tr></thead>
<tbody id="log-rows"></tbody>
</table>
</div>
<p><button class="button" type="button" id="log-more" hidden>Load older</button></p>
</section>
</div>`;
    const body = page({
      title: 'Moderation',
      appName,
      current: 'admin',
      main,
      scripts: ['admin.js'],
      data: {
        'reason-labels': JSON.stringify(Object.fromEntries(REPORT_REASONS.map((r) => [r, REASON_LABELS[r]]))),
        'client-words': JSON.stringify(clientWords(appName)),
      },
    });
    return sendPage(request, reply, body);
  });
};

export default adminPageRoutes;
