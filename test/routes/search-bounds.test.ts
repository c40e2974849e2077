/**
 * The search page and the export with `q` read a term through the index or by testing rows in order,
 * whichever stops sooner for it (EntryQuery.textPlan), and the search page's counts stop at
 * COUNT_CAP. Whatever the plan, the entries and their order are those of a plain filter and sort.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { encodeCursor } from '../../src/domain/entry-selection.ts';
import { searchSummary } from '../../src/routes/site/search.ts';
import { COUNT_CAP } from '../../src/storage/entry-query.ts';
import { createTestApp, entry, setState, type TestContext } from '../helper.ts';

const START = 1_709_251_200;
const ROWS = 2600;
const uuid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
// Pairs of entries share a timestamp, so that the uuid breaks ties; the uuids run against the rows.
const rows = Array.from({ length: ROWS }, (_, i) => {
  const words = [i % 10 !== 3 ? 'Heron' : '', i % 2 === 0 ? 'wren' : '', i % 97 === 0 ? 'ZEBRA' : ''].filter(Boolean).join(' ');
  return entry(`Row ${i} ${words}`.trim(), START + Math.floor(i / 2) * 600, uuid(ROWS - i));
});
const HIDDEN = [uuid(ROWS - 0), uuid(ROWS - 4), uuid(ROWS - 97)];

/** The visible entries containing `term`, in the export's order, between the exclusive bounds. */
function expected(term: string, after = -Infinity, before = Infinity): string[] {
  return rows
    .filter((r) => !HIDDEN.includes(r.uuid!) && r.text.toLowerCase().includes(term) && r.timestamp! > after && r.timestamp! < before)
    .sort((a, b) => a.timestamp! - b.timestamp! || (a.uuid! < b.uuid! ? -1 : 1))
    .map((r) => r.uuid!);
}

function shown(html: string): string[] {
  return [...html.matchAll(/<article class="entry" data-uuid="([0-9a-f-]+)"/g)].map((m) => m[1]!);
}
function hrefOf(html: string, rel: 'next' | 'prev'): string | undefined {
  const match = new RegExp(`rel="${rel}" href="([^"]+)"`).exec(html);
  return match ? match[1]!.replaceAll('&amp;', '&') : undefined;
}
function summaryOf(html: string): string {
  return /<h2 id="results-title" class="results-title">([^<]*)<\/h2>/.exec(html)![1]!;
}
function startOf(html: string): string | null {
  return /<ol class="result-list"(?: start="(\d+)")?>/.exec(html)?.[1] ?? null;
}
const cursorAt = (list: string[], index: number) => encodeCursor({ timestamp: rows.find((r) => r.uuid === list[index])!.timestamp!, uuid: list[index]! });

describe('search at scale: plans and bounded counts', () => {
  let t: TestContext;
  let get: (url: string) => Promise<string>;
  beforeAll(async () => {
    t = await createTestApp({ entries: rows });
    for (const hidden of HIDDEN) await setState(t.storage, hidden, 'hidden');
    get = async (url) => {
      const res = await t.app.inject(url);
      expect(res.statusCode, res.body).toBe(200);
      return res.body;
    };
  });
  afterAll(() => t.close());

  it('chooses the index for a term in few entries and the order for one in many (SQLite)', async () => {
    const plan = (q: string) => t.storage.entryQuery.textPlan({ q });
    if (t.database.quirks.engine === 'sqlite') {
      expect(await plan('heron')).toBe('scan');
      expect(await plan('WREN')).toBe('index');
      expect(await plan('zebra')).toBe('index');
    } else {
      expect(await plan('heron')).toBeUndefined();
    }
    expect(await plan('he')).toBeUndefined();
    expect(await plan('')).toBeUndefined();
  });

  it('reads a term in few entries by key from the index, without walking the order index', async () => {
    if (t.database.quirks.engine !== 'sqlite') return;
    const query = t.storage.entryQuery.select({ filter: { q: 'zebra', after: START }, textMatch: 'index', limit: 21 }).compile();
    const { rows: plan } = await t.database.db.executeQuery<{ detail: string }>({ ...query, sql: `explain query plan ${query.sql}` } as never);
    const details = plan.map((row) => row.detail).join(' | ');
    expect(details).toMatch(/SEARCH entries USING INTEGER PRIMARY KEY \(rowid=\?\)/);
    expect(details).not.toMatch(/entries_state_created/);
    // And the count of a term in many entries reads the index's matches one by one, stopping early.
    const counted = await t.database.quirks.countIndexMatches(t.database.db, 'heron', 5, sql`entries.state = 'visible'`);
    expect(counted).toBe(5);
  });

  it('pages a term in many entries as a plain filter and sort would, counting up to the cap', async () => {
    const all = expected('heron');
    expect(all.length).toBeGreaterThan(2000);
    const first = await get('/search?q=heron');
    expect(summaryOf(first)).toBe(`1–20 of more than ${COUNT_CAP.toLocaleString('en-US')} entries matching`);
    expect(shown(first)).toEqual(all.slice(0, 20));
    expect(hrefOf(first, 'prev')).toBeUndefined();
    const second = await get(hrefOf(first, 'next')!);
    expect(shown(second)).toEqual(all.slice(20, 40));
    expect(summaryOf(second)).toBe('21–40 of more than 1,000 entries matching');
    expect(startOf(second)).toBe('21');
    // Deep: more than the cap come before, so the page has no position, but links both ways.
    const deep = await get(`/search?q=heron&next=${cursorAt(all, 1009)}`);
    expect(shown(deep)).toEqual(all.slice(1010, 1030));
    expect(summaryOf(deep)).toBe('20 entries matching, after the first 1,000');
    expect(startOf(deep)).toBeNull();
    const back = await get(hrefOf(deep, 'prev')!);
    expect(shown(back)).toEqual(all.slice(990, 1010));
    expect(summaryOf(back)).toBe('991–1,010 of more than 1,000 entries matching');
    const last = await get(`/search?q=heron&next=${cursorAt(all, all.length - 6)}`);
    expect(shown(last)).toEqual(all.slice(-5));
    expect(hrefOf(last, 'next')).toBeUndefined();
    expect(hrefOf(last, 'prev')).toBeDefined();
    const past = await get(`/search?q=heron&next=${cursorAt(all, all.length - 1)}`);
    expect(shown(past)).toEqual([]);
    expect(summaryOf(past)).toBe('No more entries: all are on earlier pages.');
  });

  it('pages a term in few entries, and one in more than the cap, as a plain filter and sort would', async () => {
    const zebras = expected('zebra');
    expect(zebras.length).toBe(25);
    const first = await get('/search?q=Zebra');
    expect(shown(first)).toEqual(zebras.slice(0, 20));
    expect(summaryOf(first)).toBe('1–20 of 25 entries matching');
    const second = await get(hrefOf(first, 'next')!);
    expect(shown(second)).toEqual(zebras.slice(20));
    expect(summaryOf(second)).toBe('21–25 of 25 entries matching');
    expect(hrefOf(second, 'next')).toBeUndefined();
    expect(shown(await get(hrefOf(second, 'prev')!))).toEqual(zebras.slice(0, 20));

    const wrens = expected('wren');
    expect(wrens.length).toBeGreaterThan(COUNT_CAP);
    const within = await get(`/search?q=wren&next=${cursorAt(wrens, 979)}`);
    expect(shown(within)).toEqual(wrens.slice(980, 1000));
    expect(summaryOf(within)).toBe('981–1,000 of more than 1,000 entries matching');
    expect(summaryOf(await get(`/search?q=wren&next=${cursorAt(wrens, 1000)}`))).toBe('20 entries matching, after the first 1,000');
  });

  it('counts within a date range, whichever the plan', async () => {
    // 288 rows a day, from 2024-03-01 on.
    const DAY = 86_400;
    for (const [from, to, days] of [['2024-03-02', '2024-03-03', 2], ['2024-03-01', '2024-03-07', 7]] as const) {
      const after = START + (from === '2024-03-02' ? DAY : 0) - 1;
      for (const term of ['heron', 'wren', 'zebra']) {
        const list = expected(term, after, after + 1 + days * DAY);
        const page = await get(`/search?q=${term}&from=${from}&to=${to}`);
        expect(shown(page)).toEqual(list.slice(0, 20));
        const of = list.length > COUNT_CAP ? 'more than 1,000' : list.length.toLocaleString('en-US');
        expect(summaryOf(page)).toBe(`1–${Math.min(20, list.length)} of ${of} entries matching`);
      }
    }
  });

  it('asks the index when walking the order takes too long, and leaves out counts that do', async () => {
    // Every reading of the clock a second later: each statement with a time limit runs out at once
    // (on SQLite; PostgreSQL's statement timeout does not read this clock, and simply finishes).
    let now = Date.now();
    const clock = vi.spyOn(Date, 'now').mockImplementation(() => (now += 1000));
    try {
      // SQLite reads the clock on rows whose id is a multiple of 1,024: the page holds row 2,047 (id
      // 2,048), and the count before it passes id 1,024.
      const all = expected('heron');
      const at = all.indexOf(uuid(ROWS - 2047)) - 10;
      const cursor = { timestamp: rows.find((r) => r.uuid === all[at])!.timestamp!, uuid: all[at]! };
      const listed = vi.spyOn(t.storage.entryQuery, 'list');
      const page = await t.storage.entryQuery.searchPage({ q: 'heron' }, 20, { next: cursor });
      const asked = listed.mock.calls.map(([query]) => query.textMatch);
      listed.mockRestore();
      expect(asked).toEqual(t.database.quirks.engine === 'sqlite' ? ['scan', 'index'] : [undefined]);
      expect(page.found.map((e) => e.uuid)).toEqual(all.slice(at + 1, at + 21));
      expect(page.more).toBe(true);
      expect(page.rank).toEqual(t.database.quirks.engine === 'sqlite' ? null : { n: COUNT_CAP, over: true });
      // The index's first 1,001 matches end before id 2,048, and id 1,024 does not match: no clock.
      expect(page.total).toEqual({ n: COUNT_CAP, over: true });
      // Within dates the rows are counted in order first, past id 1,024 here: out of time, the
      // index's matches are counted instead.
      const counted = vi.spyOn(t.database.quirks, 'countIndexMatches');
      const dated = await t.storage.entryQuery.searchPage({ q: 'heron', after: START - 1, before: START + 7 * 86_400 }, 20, {});
      const byIndex = counted.mock.calls.filter((call) => call[3] !== undefined).length;
      counted.mockRestore();
      expect(dated.found.map((e) => e.uuid)).toEqual(expected('heron', START - 1, START + 7 * 86_400).slice(0, 20));
      expect(dated.total).toEqual({ n: COUNT_CAP, over: true });
      expect(byIndex).toBe(t.database.quirks.engine === 'sqlite' ? 1 : 0);
    } finally {
      clock.mockRestore();
    }
  });

  it('exports a term with either plan exactly as a plain filter and sort would, across pages', async () => {
    for (const term of ['heron', 'wren', 'zebra']) {
      const res = await t.app.inject(`/api/v1/nonsense?format=json&q=${term}`);
      expect(res.statusCode).toBe(200);
      expect((res.json() as { uuid: string }[]).map((e) => e.uuid)).toEqual(expected(term));
      // The walk on the event loop (PostgreSQL, the command line) chooses the same way.
      const walked: string[] = [];
      for await (const page of t.storage.entryQuery.pages({ q: term, after: START + 30_000 }, 700)) walked.push(...page.map((e) => e.uuid));
      expect(walked).toEqual(expected(term, START + 30_000));
      // Either plan, forced, walks the same entries.
      for (const textMatch of ['index', 'scan'] as const) {
        const forced: string[] = [];
        for await (const page of t.storage.entryQuery.listPages({ filter: { q: term }, textMatch }, 700)) forced.push(...page.map((e) => e.uuid));
        expect(forced).toEqual(expected(term));
      }
    }
  });
});

describe('the search page summary', () => {
  it('says "more than" past the cap or the last shown, and leaves out a position it does not know', () => {
    expect(searchSummary(20, { n: 234, over: false }, { n: 21, over: false }, true)).toBe('21–40 of 234 entries matching');
    expect(searchSummary(1, { n: 1, over: false }, { n: 1, over: false }, true)).toBe('1–1 of 1 entry matching');
    expect(searchSummary(20, { n: 1000, over: true }, { n: 1, over: false }, false)).toBe('1–20 of more than 1,000 entries');
    expect(searchSummary(20, null, { n: 41, over: false }, true)).toBe('41–60 of more than 60 entries matching');
    expect(searchSummary(20, { n: 1000, over: true }, { n: 1000, over: true }, true)).toBe('20 entries matching, after the first 1,000');
    expect(searchSummary(20, null, null, true)).toBe('20 entries matching, after those on earlier pages');
    expect(searchSummary(0, { n: 0, over: false }, { n: 1, over: false }, true)).toBe('No entries match. Try a shorter term or a wider date range.');
    expect(searchSummary(0, { n: 40, over: false }, { n: 41, over: false }, true)).toBe('No more entries: all 40 are on earlier pages.');
  });
});
