/**
 * `GET /`: a random entry, large, with "Another one". The page works without JavaScript ("Another one"
 * is a link to `/`); with it, the page script fetches /api/v1/nonsense/random instead of reloading.
 */
import type { FastifyPluginAsync } from 'fastify';
import { mathRandomPick } from '../../domain/variables.ts';
import { deliverEntry } from '../../domain/delivered-entry.ts';
import { entryArticle, reportDialog } from '../../web/components.ts';
import { clientWords, emojiFiles, entryHtml, siteVariables } from '../../web/entry-text.ts';
import { html } from '../../web/html.ts';
import { page, sendPage } from '../../web/layout.ts';
import { absoluteBase } from '../../plugins/links.ts';

const homeRoutes: FastifyPluginAsync = async (app) => {
  const { variables } = app.storage;
  const reader = app.entryService;
  const { appName } = app.config;

  app.get('/', { schema: { hide: true } }, async (request, reply) => {
    const entry = await reader.randomEntry(mathRandomPick);
    let main;
    if (entry === null) {
      main = html`<section class="empty" aria-labelledby="empty-title">
<h1 id="empty-title">No entries yet</h1>
<p>The database is empty. Moderators can add entries on the <a href="/admin">moderation page</a>.</p>
</section>`;
    } else {
      // The same substitution as the API's random endpoint, with the client-side words added to it.
      const delivered = deliverEntry(entry, siteVariables(await variables.values(), appName));
      const article = entryArticle(
        {
          uuid: entry.uuid,
          timestamp: entry.timestamp,
          text: entryHtml(delivered.nonsense, await emojiFiles(app.storage)),
          shareUrl: `${absoluteBase(request, reply)}/nonsense/${entry.uuid}`,
        },
        { big: true, label: 'Random entry' },
      );
      main = html`<h1 class="visually-hidden">A random entry</h1>
<div class="stage" id="stage" aria-live="polite">
${article}
</div>
<p class="another"><a class="button button-primary button-large" href="/" data-action="another">Another one</a></p>
${reportDialog()}`;
    }
    const body = page({
      title: appName,
      appName,
      current: 'random',
      main,
      scripts: ['site.js'],
      description: 'Random nonsense entries: read, search, share.',
      data: { 'client-words': JSON.stringify(clientWords(appName)) },
    });
    // A new entry on every visit, like the API's random endpoint.
    return sendPage(request, reply, body, 'no-store');
  });
};

export default homeRoutes;
