/**
 * `GET /search`: entries matching a term and a date range, 20 a page, server-rendered. It reads through
 * `entryQuery` like the export, so a term matches here exactly what `q` matches there; paging uses
 * the same (timestamp, uuid) keyset in both directions, so pages never skip or repeat entries while
 * entries are added.
 */
import type { FastifyPluginAsync } from 'fastify';
import { MAX_SEARCH_LENGTH, parseSearchText } from '../../domain/search-text.ts';
import { encodeCursor, parseCursor, type EntryCursor, type EntryFilter } from '../../domain/entry-selection.ts';
import { displayText } from '../../domain/display-text.ts';
import { badRequest } from '../../http/problem.ts';
import { entryArticle, reportDialog } from '../../web/components.ts';
import { emojiFiles, entryHtml } from '../../web/entry-text.ts';
import { html } from '../../web/html.ts';
import { page, sendPage } from '../../web/layout.ts';
import { absoluteBase } from '../../plugins/links.ts';
import { COUNT_CAP, type BoundedCount } from '../../storage/entry-query.ts';

export const PAGE_SIZE = 20;
const DAY = 86_400;

export interface SearchParams {
  q: string;
  /** YYYY-MM-DD as given, or ''. */
  from: string;
  to: string;
  filter: EntryFilter;
  next?: EntryCursor;
  prev?: EntryCursor;
}

/** dayStart is the Unix second a YYYY-MM-DD day begins (UTC); null when it is no real date. */
function dayStart(value: string): number | null {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!match) return null;
  const time = Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]));
  // Date.UTC rolls 2023-02-31 over into March; a real date survives the round trip.
  return new Date(time).toISOString().slice(0, 10) === value ? time / 1000 : null;
}

function pagePosition(name: string, value: string): EntryCursor {
  const cursor = parseCursor(value);
  if (cursor === null) throw badRequest(`The parameter "${name}" is not a page position; use the links of the search page.`, { parameter: name });
  return cursor;
}

/**
 * parseSearch checks the query string. The dates are whole days in UTC and both are included: `from`
 * becomes the exclusive `after` one second before the day, `to` the exclusive `before` at the end of
 * its day.
 */
export function parseSearch(query: Record<string, unknown>): SearchParams {
  const text = (name: string) => {
    const value = query[name];
    if (value === undefined) return '';
    if (typeof value !== 'string') throw badRequest(`Give the parameter "${name}" once.`);
    return value;
  };
  const term = parseSearchText(text('q'));
  if (!term.ok) throw badRequest(term.detail, { parameter: 'q' });
  const q = term.value;
  const filter: EntryFilter = { q };
  const from = text('from').trim();
  const to = text('to').trim();
  if (from !== '') {
    const start = dayStart(from);
    if (start === null) throw badRequest(`The parameter "from" must be a date such as 2024-05-31; got "${from.slice(0, 40)}".`);
    filter.after = start - 1;
  }
  if (to !== '') {
    const start = dayStart(to);
    if (start === null) throw badRequest(`The parameter "to" must be a date such as 2024-05-31; got "${to.slice(0, 40)}".`);
    filter.before = start + DAY;
  }
  const next = text('next').trim();
  const prev = text('prev').trim();
  return {
    q,
    from,
    to,
    filter,
    ...(next !== '' ? { next: pagePosition('next', next) } : {}),
    ...(prev !== '' && next === '' ? { prev: pagePosition('prev', prev) } : {}),
  };
}

/** A number as the page writes it: 1,000. */
const count = (n: number) => n.toLocaleString('en-US');

/**
 * searchSummary is the line above the results: "21–40 of 234 entries matching", "of more than 1,000"
 * past COUNT_CAP (the counts stop there), and without a position when more than that come before.
 */
export function searchSummary(shown: number, total: BoundedCount, rank: BoundedCount, filtered: boolean): string {
  const matching = filtered ? ' matching' : '';
  if (total !== null && !total.over && total.n === 0) return filtered ? 'No entries match. Try a shorter term or a wider date range.' : 'There are no entries yet.';
  if (shown === 0) return total !== null && !total.over ? `No more entries: all ${count(total.n)} are on earlier pages.` : 'No more entries: all are on earlier pages.';
  const entries = (n: number) => (n === 1 ? 'entry' : 'entries');
  if (rank === null || rank.over) {
    return `${count(shown)} ${entries(shown)}${matching}, after ${rank === null ? 'those on earlier pages' : `the first ${count(COUNT_CAP)}`}`;
  }
  const end = rank.n + shown - 1;
  // Unknown only when more come after this page: more than its last, then.
  const of = total === null ? `more than ${count(end)}` : total.over ? `more than ${count(total.n)}` : count(total.n);
  return `${count(rank.n)}–${count(end)} of ${of} ${entries(total === null || total.over ? 2 : total.n)}${matching}`;
}

const searchRoutes: FastifyPluginAsync = async (app) => {
  const { entryQuery, variables } = app.storage;
  const { appName } = app.config;

  app.get('/search', { schema: { hide: true }, config: { heavy: true } }, async (request, reply) => {
    const params = parseSearch(request.query as Record<string, unknown>);
    const position = { ...(params.next ? { next: params.next } : {}), ...(params.prev ? { prev: params.prev } : {}) };
    // An embedded database file is searched in the worker thread, like every read whose cost
    // depends on the term and the data: each statement is synchronous there (services/read-workers).
    const { found, more, total, rank } = app.readWorkers
      ? await app.readWorkers.searchPage(params.filter, PAGE_SIZE, position, { client: app.fairShare.clientOf(request) })
      : await entryQuery.searchPage(params.filter, PAGE_SIZE, position);
    const first = found[0];
    const last = found.at(-1);
    const values = await variables.values();
    const emojis = await emojiFiles(app.storage);
    const base = absoluteBase(request, reply);

    const link = (extra: Record<string, string>) => {
      const search = new URLSearchParams();
      if (params.q) search.set('q', params.q);
      if (params.from) search.set('from', params.from);
      if (params.to) search.set('to', params.to);
      for (const [key, value] of Object.entries(extra)) search.set(key, value);
      return `/search?${search}`;
    };
    // The position is known up to COUNT_CAP; past it (or when counting took too long) it is not shown.
    const firstPosition = rank !== null && !rank.over ? rank.n : undefined;
    const hasPrev = first !== undefined && firstPosition !== 1;
    const hasNext = last !== undefined && more;
    const filtered = params.q !== '' || params.from !== '' || params.to !== '';
    const summary = searchSummary(found.length, total, rank, filtered);
    const main = html`<h1>Search</h1>
<form class="search-form" method="get" action="/search" role="search" aria-label="Entries">
<div class="field field-term">
<label for="q">Text contains</label>
<input type="search" id="q" name="q" value="${params.q}" maxlength="${MAX_SEARCH_LENGTH}" autocomplete="off" spellcheck="false">
</div>
<div class="field">
<label for="from">Added from</label>
<input type="date" id="from" name="from" value="${params.from}">
</div>
<div class="field">
<label for="to">Added until</label>
<input type="date" id="to" name="to" value="${params.to}">
</div>
<div class="field field-submit"><button class="button button-primary" type="submit">Search</button></div>
</form>
<p class="hint">Case-insensitive; dates are whole days in UTC, both included.</p>
<section class="results" aria-labelledby="results-title">
<h2 id="results-title" class="results-title">${summary}</h2>
${
  found.length > 0
    ? html`<ol class="result-list"${firstPosition === undefined ? '' : html` start="${firstPosition}"`}>
${found.map(
  (entry) => html`<li>${entryArticle({
    uuid: entry.uuid,
    timestamp: entry.timestamp,
    // As on the share page each result links to: server values seeded by the uuid, neutral words.
    text: entryHtml(displayText(entry.text, values, entry.uuid, appName), emojis, params.q || undefined),
    shareUrl: `${base}/nonsense/${entry.uuid}`,
  })}</li>
`,
)}</ol>`
    : ''
}
${
  hasPrev || hasNext
    ? html`<nav class="pager" aria-label="Result pages">
${hasPrev ? html`<a class="button" rel="prev" href="${link({ prev: encodeCursor(first) })}">← Previous</a>` : html`<span></span>`}
${hasNext ? html`<a class="button" rel="next" href="${link({ next: encodeCursor(last) })}">Next →</a>` : html`<span></span>`}
</nav>`
    : ''
}
</section>
${reportDialog()}`;
    const title = params.q ? `“${params.q}”` : 'Search';
    return sendPage(request, reply, page({ title, appName, current: 'search', main, scripts: ['site.js'] }));
  });
};

export default searchRoutes;
