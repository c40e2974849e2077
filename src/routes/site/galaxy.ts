/**
 * `GET /galaxy`: the galaxy as a 3D star field (three.js, served by the service itself under the
 * site's strict policy). The page script draws the stars of GET /api/v1/nonsense/galaxy, shows an
 * entry's text on hover, opens its share page on click, and highlights the results of a search. The
 * page says what it is without the script, and without WebGL.
 */
import type { FastifyPluginAsync } from 'fastify';
import { MAX_SEARCH_LENGTH } from '../../domain/search-text.ts';
import { assetUrl } from '../../web/assets.ts';
import { clientWords } from '../../web/entry-text.ts';
import { html } from '../../web/html.ts';
import { page, sendPage } from '../../web/layout.ts';

const galaxyPageRoutes: FastifyPluginAsync = async (app) => {
  const { entries } = app.storage;
  const { appName } = app.config;

  app.get('/galaxy', { schema: { hide: true } }, async (request, reply) => {
    const { count } = await entries.status();
    const stars = `${count.toLocaleString('en')} ${count === 1 ? 'entry' : 'entries'}`;
    const main = html`<section class="galaxy" aria-labelledby="galaxy-title">
<h1 id="galaxy-title">Galaxy</h1>
<p class="galaxy-intro">Every entry is a star, and entries that say similar things shine close together: ${stars}.
Bigger, brighter stars are longer entries.</p>
<form class="search-form search-form-short galaxy-search" method="get" action="/search" role="search" aria-label="Highlight stars">
<div class="field field-term">
<label for="galaxy-q">Highlight entries containing</label>
<input type="search" id="galaxy-q" name="q" maxlength="${MAX_SEARCH_LENGTH}" autocomplete="off" spellcheck="false">
</div>
<div class="field field-submit"><button class="button button-primary" type="submit">Highlight</button></div>
</form>
<p class="hint galaxy-matches" id="galaxy-matches" role="status"></p>
<div class="galaxy-view" id="galaxy-view" data-state="loading">
<canvas class="galaxy-canvas" id="galaxy-canvas" tabindex="0" aria-label="Star map of the entries. Focus it to use the keys below." aria-describedby="galaxy-keys"></canvas>
<div class="galaxy-tip" id="galaxy-tip" role="status" hidden></div>
<p class="galaxy-status" id="galaxy-status">Loading the galaxy…</p>
</div>
<details class="galaxy-keys" id="galaxy-keys">
<summary>Mouse and keys</summary>
<ul>
<li>Drag to turn the galaxy, scroll to zoom; hover a star to read it, click it to open its page.</li>
<li><kbd>←</kbd> <kbd>→</kbd> <kbd>↑</kbd> <kbd>↓</kbd> turn, <kbd>+</kbd> <kbd>-</kbd> zoom, <kbd>0</kbd> back to the start.</li>
<li><kbd>N</kbd> and <kbd>P</kbd> go to the next and previous star (the highlighted ones after a search), <kbd>Enter</kbd> opens it, <kbd>Esc</kbd> lets go.</li>
</ul>
</details>
<noscript><p class="galaxy-fallback">The galaxy is drawn by a script with WebGL, which this browser does not run.
<a href="/search">Search the entries</a> instead, or download the star map as <a href="/api/v1/nonsense/galaxy">CSV</a>.</p></noscript>
</section>`;
    const body = page({
      title: 'Galaxy',
      appName,
      current: 'galaxy',
      main,
      scripts: ['galaxy.js'],
      description: 'Every entry as a star: similar entries close together.',
      data: { three: assetUrl('three.module.js'), 'client-words': JSON.stringify(clientWords(appName)) },
    });
    return sendPage(request, reply, body);
  });
};

export default galaxyPageRoutes;
