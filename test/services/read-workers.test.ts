/**
 * The read workers (src/services/read-workers): the same export file as the event-loop path for the
 * same draw, page by page with backpressure, the same OData reads, and failures that reach the
 * response as errors (before the first byte) or as an aborted transfer (after it).
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { EXPORT_PAGE_SIZE, exportPageSize, serializeExport } from '../../src/formats/export.ts';
import { TimeLimitError } from '../../src/db/time-limit.ts';
import { parseFilter, parseOrderBy } from '../../src/domain/odata/expression.ts';
import { ReadWorkers } from '../../src/services/read-workers/index.ts';
import { textKey } from '../../src/domain/text.ts';
import { runODataRead, type ODataRead } from '../../src/storage/odata-reads.ts';
import { createTestApp, entry, type TestContext } from '../helper.ts';
import { mulberry32 } from '../seeded-random.ts';

const sqlite = process.env.TEST_DATABASE !== 'postgres';

async function collect(chunks: AsyncIterable<string | Uint8Array>): Promise<string> {
  const decoder = new TextDecoder();
  let text = '';
  for await (const chunk of chunks) text += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
  return text + decoder.decode();
}

describe('ReadWorkers.forDatabase', () => {
  it('takes an SQLite file, not an in-memory database or PostgreSQL', () => {
    expect(ReadWorkers.forDatabase({ engine: 'sqlite', file: '/tmp/x.db' })).not.toBeNull();
    expect(ReadWorkers.forDatabase({ engine: 'sqlite', file: ':memory:' })).toBeNull();
    expect(ReadWorkers.forDatabase({ engine: 'postgres', url: 'postgres://127.0.0.1/x' } as never)).toBeNull();
  });
});

describe.runIf(sqlite)('the read workers', () => {
  let t: TestContext;
  let workers: ReadWorkers;
  const variables = new Map([['$ANIMAL$', ['goose', 'newt', 'yak']]]);

  beforeAll(async () => {
    const many = Array.from({ length: 2 * EXPORT_PAGE_SIZE + 300 }, (_, i) =>
      entry(i % 7 === 0 ? `Entry ${i}: the $ANIMAL$ signs the guest book.` : `Entry ${i}, "quoted", with a comma.`, 1_700_200_000 + i),
    );
    t = await createTestApp({ entries: many });
    workers = ReadWorkers.forDatabase(t.config.database)!;
  });
  afterAll(async () => {
    await workers.close();
    await t.close();
  });

  it('writes every format as the event-loop path does for the same draw', async () => {
    for (const format of ['csv', 'json', 'txt'] as const) {
      const filter = format === 'txt' ? { singleLine: true } : {};
      vi.spyOn(Math, 'random').mockImplementation(mulberry32(5));
      // The export's own pages, small first (formats/export.ts exportPageSize), cut alike on both paths.
      const file = await workers.open(format, filter, exportPageSize, variables);
      vi.mocked(Math.random).mockRestore();
      const offThread = await collect(file);
      vi.spyOn(Math, 'random').mockImplementation(mulberry32(5));
      const onLoop = await collect(serializeExport(format, t.storage.entryQuery.pages(filter, exportPageSize), variables));
      vi.mocked(Math.random).mockRestore();
      expect(offThread, format).toBe(onLoop);
      expect(offThread).toContain('Entry 2299');
      // Another draw picks other animals.
      expect(await collect(await workers.open(format, filter, exportPageSize, variables))).not.toBe(onLoop);
    }
  });

  it('finds a search term on every page as the index does', async () => {
    // A term on 6 entries of 7, one on 1,111, one on 111 (several pages each, then one), a two-letter one (no index).
    for (const q of ['comma', 'entry 1', 'ENTRY 22', 'y ']) {
      vi.spyOn(Math, 'random').mockImplementation(mulberry32(7));
      const offThread = await collect(await workers.open('csv', { q }, exportPageSize, variables));
      vi.mocked(Math.random).mockRestore();
      vi.spyOn(Math, 'random').mockImplementation(mulberry32(7));
      // The reference finds the term through the index on every page.
      const onLoop = await collect(serializeExport('csv', t.storage.entryQuery.listPages({ filter: { q } }, exportPageSize), variables));
      vi.mocked(Math.random).mockRestore();
      expect(offThread, q).toBe(onLoop);
      expect(offThread.split('\r\n').length, q).toBeGreaterThan(100);
    }
  });

  it('writes an empty selection as an empty file of its format', async () => {
    const none = { after: 2_000_000_000 };
    expect(await collect(await workers.open('json', none, EXPORT_PAGE_SIZE, variables))).toBe('[]');
    expect(await collect(await workers.open('csv', none, EXPORT_PAGE_SIZE, variables))).toBe('uuid,nonsense,original_nonsense,timestamp\r\n');
  });

  it('fails before the first byte when the first page cannot be read, and mid-file after that', async () => {
    const rename = (from: string, to: string) => sql`alter table ${sql.raw(from)} rename to ${sql.raw(to)}`.execute(t.database.db);
    const started = await workers.open('csv', {}, EXPORT_PAGE_SIZE, variables);
    await rename('entries', 'entries_away');
    try {
      await expect(workers.open('csv', {}, EXPORT_PAGE_SIZE, variables)).rejects.toThrow(/no such table/);
      // The walk started before: its first page is sent, the next one fails.
      expect(new TextDecoder().decode((await started.next()).value as Uint8Array)).toMatch(/^uuid,nonsense/);
      await expect(started.next()).rejects.toThrow(/no such table/);
    } finally {
      await rename('entries_away', 'entries');
    }
  });

  it('draws a batch of random picks before the searches waiting, as random requests wait for it', async () => {
    const two = ReadWorkers.forDatabase(t.config.database, 16, 2)!;
    try {
      // The order in which the queue hands tasks to the threads.
      const pool = (two as unknown as { pool: { run: (name: string, task: unknown) => Promise<unknown> } }).pool;
      const run = pool.run.bind(pool);
      const started: string[] = [];
      vi.spyOn(pool, 'run').mockImplementation((name, task) => (started.push(name), run(name, task)));
      const searches = Array.from({ length: 5 }, (_, i) => two.searchPage({ q: 'entry' }, 20, {}, { client: `192.0.2.${i}` }));
      const [drawn] = await Promise.all([two.draws([{ block: 0, nth: 0, visible: 1, id: 1 }], variables), ...searches]);
      expect(drawn).toHaveLength(1);
      expect(drawn[0]?.json).toBeDefined();
      // Two searches were running when the batch came; it went before the three waiting.
      expect(started).toEqual(['searchTask', 'searchTask', 'drawTask', 'searchTask', 'searchTask', 'searchTask']);
    } finally {
      await two.close();
    }
  });

  it('reads the pages an admin write is about to touch: its row, its places in the state index, its block, a text key', async () => {
    const [listed] = await t.storage.entryQuery.list({ limit: 1 });
    const { uuid, text } = listed!;
    expect(await workers.warm({ uuid })).toBe(3);
    expect(await workers.warm({ uuid, textKey: textKey(text) })).toBe(4);
    expect(await workers.warm({ textKey: textKey('No entry says this.') })).toBe(0);
    expect(await workers.warm({ uuid: 'ffffffff-ffff-4fff-8fff-ffffffffffff' })).toBe(0);
  });

  it('starts no thread for a task asked for once closed (a random batch during a shutdown)', async () => {
    const late = ReadWorkers.forDatabase(t.config.database)!;
    const [listed] = await t.storage.entryQuery.list({ limit: 1 });
    expect(await late.warm({ uuid: listed!.uuid })).toBe(3);
    await late.close();
    await expect(late.warm({ uuid: listed!.uuid })).rejects.toThrow(/closed/);
  });

  it('reads OData in the worker as on the event loop, and charges its database time, failures included', async () => {
    const selection = { filter: parseFilter("substringof('1',nonsense)"), orderBy: parseOrderBy('nonsense desc') };
    const tokens = [...variables.keys()];
    const spent: number[] = [];
    const spend = { spent: (ms: number) => spent.push(ms) };
    const onLoop = (read: ODataRead) => runODataRead(t.storage.entryQuery, t.database.quirks, tokens, read);
    const list = { kind: 'list', selection, limit: 20, timeLimitMs: 5000 } as const;
    expect(await workers.odata(list, tokens, spend)).toEqual(await onLoop(list));
    const count = { kind: 'count', selection, timeLimitMs: 5000 } as const;
    expect(await workers.odata(count, tokens, spend)).toBe(await onLoop(count));
    const first = { kind: 'page', selection, limit: 7, timeLimitMs: 5000 } as const;
    const page = await workers.odata(first, tokens, spend);
    expect(page).toEqual(await onLoop(first));
    const next = { ...first, resume: page.seek! };
    expect(await workers.odata(next, tokens, spend)).toEqual(await onLoop(next));
    expect(spent).toHaveLength(4);
    // A time limit and a missing table come back as the errors the route knows.
    const wide = (depth: number): string => (depth === 0 ? 'nonsense' : `concat(${wide(depth - 1)},${wide(depth - 1)})`);
    const heavy = { kind: 'count', selection: { filter: parseFilter(`indexof(${wide(5)},'zq') eq 7`) }, timeLimitMs: 1 } as const;
    await expect(workers.odata(heavy, tokens, spend)).rejects.toBeInstanceOf(TimeLimitError);
    expect(spent).toHaveLength(5);
    const rename = (from: string, to: string) => sql`alter table ${sql.raw(from)} rename to ${sql.raw(to)}`.execute(t.database.db);
    await rename('entries', 'entries_away');
    try {
      await expect(workers.odata(list, tokens, spend)).rejects.toThrow(/no such table/);
    } finally {
      await rename('entries_away', 'entries');
    }
    expect(spent).toHaveLength(6);
  });

  it('matches a search term with GLOB’s wildcards in it literally on every page', async () => {
    // Every other entry holds `[x]*?` literally; the others hold what the wildcards would match.
    const wild = await createTestApp({
      entries: Array.from({ length: 2 * EXPORT_PAGE_SIZE + 500 }, (_, n) => entry(n % 2 === 0 ? `Wild ${n}: a [x]*? b` : `Wild ${n}: a x-and-more! b`, 1_700_400_000 + n)),
    });
    const pool = ReadWorkers.forDatabase(wild.config.database)!;
    try {
      for (const q of ['[x]*?', 'a [X]*', '*?']) {
        const offThread = await collect(await pool.open('txt', { q, singleLine: true }, EXPORT_PAGE_SIZE, new Map()));
        const byIndex = await collect(serializeExport('txt', wild.storage.entryQuery.listPages({ filter: { q, singleLine: true } }, EXPORT_PAGE_SIZE), new Map()));
        expect(offThread, q).toBe(byIndex);
        expect(offThread.trim().split('\n'), q).toHaveLength(EXPORT_PAGE_SIZE + 250);
      }
    } finally {
      await pool.close();
      await wild.close();
    }
  });

  it('writes texts that need quotes, a formula prefix, a line break or a variable as the event-loop path does, across pages', async () => {
    // The worker reads CSV pages as lines made by SQLite and keeps those that are already their
    // record; every kind of text that is not must come out as csvRecord writes it.
    const texts = ['=1+1', '+plus', '-minus', '@at', "'quoted start", 'ends with a comma,', 'a "quote" inside', 'two\nlines', 'crlf\r\nlines',
      'costs $5, not $ANIMAL', 'the $ANIMAL$ waves', 'fake,,1\r\n', '12345', 'é 漢 🦆 plain', 'plain, and then some', 'just plain'];
    const tricky = await createTestApp({ entries: texts.map((text, n) => entry(text, 1_700_500_000 + (n >> 1))) });
    const pool = ReadWorkers.forDatabase(tricky.config.database)!;
    try {
      for (const pageSize of [3, EXPORT_PAGE_SIZE]) {
        vi.spyOn(Math, 'random').mockImplementation(mulberry32(9));
        const offThread = await collect(await pool.open('csv', {}, pageSize, variables));
        vi.mocked(Math.random).mockRestore();
        vi.spyOn(Math, 'random').mockImplementation(mulberry32(9));
        const onLoop = await collect(serializeExport('csv', tricky.storage.entryQuery.pages({}, pageSize), variables));
        vi.mocked(Math.random).mockRestore();
        expect(offThread, String(pageSize)).toBe(onLoop);
        expect(offThread).toContain(`"fake,,1\r\n"`);
        expect(offThread).toContain(`,'=1+1,,`);
      }
    } finally {
      await pool.close();
      await tricky.close();
    }
  });

  // Heavy on purpose (6 million characters inserted, then written three times): 8 s alone here, more
  // beside the rest of the suite, hence its own time limit.
  it('writes the largest pages there can be: 1,000 entries of 2,000 CJK characters with a long variable, three times', async () => {
    const big = await createTestApp({
      variables: [{ name: '$WIDE$', description: 'A long value.', values: ['😀'.repeat(500)] }],
      entries: Array.from({ length: 3 * EXPORT_PAGE_SIZE }, (_, n) =>
        entry(Array.from({ length: 1995 }, (_, i) => String.fromCodePoint(0x4e00 + ((i * 7 + n) % 20000))).join('') + '$WIDE$', 1_700_300_000 + n),
      ),
    });
    const pool = ReadWorkers.forDatabase(big.config.database)!;
    try {
      const json = await collect(await pool.open('json', {}, EXPORT_PAGE_SIZE, await big.storage.variables.values()));
      expect((JSON.parse(json) as unknown[]).length).toBe(3 * EXPORT_PAGE_SIZE);
    } finally {
      await pool.close();
      await big.close();
    }
  }, 60_000);
});
