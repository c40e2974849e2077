/**
 * The entry service (src/services/entries): its cache of prepared JSON within a budget, complete
 * when every visible entry fits, kept current from the change log without reading every entry again;
 * its random pick by the counts per block of ids; and the status count. On both engines.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Migrator, sql, type Kysely } from 'kysely';
import { loadConfig } from '../../src/config.ts';
import { migrate, openDatabase } from '../../src/db/database.ts';
import { migrationProvider } from '../../src/db/migrations/index.ts';
import type { DB } from '../../src/db/schema.ts';
import { seededPick } from '../../src/domain/variables.ts';
import { asciiBytesOf, entryJsonEncoder, entryRecordOf, renderEntryJson } from '../../src/formats/entry.ts';
import { EntryService, type Draw, type ReadyEntry } from '../../src/services/entries/index.ts';
import { ReadWorkers } from '../../src/services/read-workers/index.ts';
import { COUNT_BLOCK } from '../../src/storage/entries.ts';
import { createStorage, type Storage } from '../../src/storage/index.ts';
import { createTestApp, entry, freshDatabaseUrl, tempDir, type TestContext } from '../helper.ts';

const MiB = 1024 * 1024;

const uuidOf = (n: number) => `0000${n.toString(16).padStart(4, '0')}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;

/** json decodes a prepared entry (its template rendered with a fixed pick). */
const json = (entry: { json: Parameters<typeof renderEntryJson>[0] }) =>
  JSON.parse(renderEntryJson(entry.json, () => 0)) as { uuid: string; nonsense: string; original_nonsense?: string; timestamp: number };

/** until polls `check` until it holds, for at most `ms`. */
async function until(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** complete waits until the service holds every visible entry. */
async function complete(service: EntryService): Promise<void> {
  await until(async () => {
    await service.status();
    service.warm();
    return service.stats().complete;
  });
}

/** counting wraps the store's reads that grow with the entries, and counts their calls. */
function counting(storage: Storage): { pages: number; blocks: number } {
  const calls = { pages: 0, blocks: 0 };
  const page = storage.entries.page.bind(storage.entries);
  storage.entries.page = (after, limit) => {
    calls.pages++;
    return page(after, limit);
  };
  const blocks = storage.entries.visibleBlocks.bind(storage.entries);
  storage.entries.visibleBlocks = () => {
    calls.blocks++;
    return blocks();
  };
  const countAll = storage.entries.countAll.bind(storage.entries);
  storage.entries.countAll = () => {
    throw new Error(`a count of every entry (${String(countAll)})`);
  };
  return calls;
}

let t: TestContext | undefined;
let services: EntryService[] = [];
afterEach(async () => {
  for (const service of services) service.close();
  services = [];
  await t?.close();
  t = undefined;
});

function serviceOf(storage: Storage, cacheBytes = 64 * MiB): EntryService {
  const service = new EntryService(storage, { cacheBytes });
  services.push(service);
  return service;
}

describe('the entry service', () => {
  it('holds every visible entry once, prepared, findable by UUID and by a uniform pick', async () => {
    // Several fill pages, a tenth with a server variable, a few hidden, text beyond Latin-1.
    const textOf = (n: number) => (n % 10 === 0 ? `Entry ${n} and its $ANIMAL$.` : n % 7 === 0 ? `Entry ${n}: 🦆 漢字.` : `Entry ${n}, crème.`);
    const entries = Array.from({ length: 3000 }, (_, n) => entry(textOf(n), 1_700_000_000 + n, uuidOf(n)));
    t = await createTestApp({ entries, variables: [{ name: '$ANIMAL$', description: 'An animal.', values: ['cat', 'goose'] }] });
    for (const n of [3, 1024, 2999]) await t.storage.entries.update(uuidOf(n), { state: 'hidden' }, 'test');
    const service = serviceOf(t.storage);
    await complete(service);
    expect(service.stats().entries).toBe(2997);
    for (const n of [3, 1024, 2999]) expect(await service.find(uuidOf(n))).toBeNull();
    for (const n of [0, 1, 7, 1023, 1025, 2998]) {
      const found = service.findNow(uuidOf(n))!;
      expect(json(found).uuid).toBe(uuidOf(n));
      expect(entryRecordOf(found.json)).toEqual({ uuid: uuidOf(n), text: textOf(n), timestamp: 1_700_000_000 + n });
      // The byte length comes without a pass over the body for an ASCII body, and only for one.
      const body = renderEntryJson(found.json);
      expect(found.asciiBytes).toBe(typeof found.json === 'string' && /^[\x00-\x7f]*$/.test(body) ? Buffer.byteLength(body) : undefined);
    }
    expect(json((await service.find(uuidOf(10)))!.entry)).toEqual({
      uuid: uuidOf(10), nonsense: 'Entry 10 and its cat.', timestamp: 1_700_000_010, original_nonsense: 'Entry 10 and its $ANIMAL$.',
    });
    expect(service.findNow(uuidOf(99_999))).toBeUndefined();
    expect(service.stats().bytes).toBeGreaterThan(2997 * 40);
  }, 60_000);

  it('applies a write from the change log: no page of entries read again, hidden entries gone at once', async () => {
    const entries = Array.from({ length: 3000 }, (_, n) => entry(`Entry number ${n}.`, 1_700_000_000 + n, uuidOf(n)));
    t = await createTestApp({ entries });
    const service = serviceOf(t.storage);
    await complete(service);
    const calls = counting(t.storage);
    const victim = uuidOf(1500);
    await t.storage.entries.update(victim, { state: 'hidden' }, 'test');
    const pick = seededPick('hidden');
    for (let i = 0; i < 300; i++) expect(json((await service.random(pick))!).uuid).not.toBe(victim);
    expect(await service.find(victim)).toBeNull();
    expect(service.findNow(victim)).toBeUndefined();

    await t.storage.entries.update(victim, { state: 'visible', text: 'Entry back, edited.' }, 'test');
    const created = await t.storage.entries.create('A new one.', 1_800_000_000, 'test');
    await t.storage.entries.remove(uuidOf(7), 'test');
    await t.storage.entries.insertEntries([entry('Imported.', 1_800_000_001, uuidOf(60_000))]);
    expect(json((await service.find(victim))!.entry).nonsense).toBe('Entry back, edited.');
    expect(json((await service.find('entry' in created ? created.entry.uuid : ''))!.entry).nonsense).toBe('A new one.');
    expect(json((await service.find(uuidOf(60_000)))!.entry).nonsense).toBe('Imported.');
    expect(await service.find(uuidOf(7))).toBeNull();
    expect(service.stats()).toMatchObject({ entries: 3001, complete: true });
    expect((await service.status()).count).toBe(3001);
    // Nothing of the size of the entries was read for any of it.
    expect(calls).toEqual({ pages: 0, blocks: 0 });
  }, 60_000);

  it('sees another instance’s hide within the revision’s max age, and never serves it after that', async () => {
    const [a, b] = [entry('Seen by both.'), entry('Hidden by the other.')];
    t = await createTestApp({ entries: [a, b], revisionMaxAgeMs: 300 });
    const other = await openDatabase(t.config.database);
    try {
      const service = serviceOf(t.storage);
      await complete(service);
      await createStorage(other).entries.update(b.uuid, { state: 'hidden' }, 'test');
      await new Promise((resolve) => setTimeout(resolve, 400));
      const pick = seededPick('other');
      for (let i = 0; i < 50; i++) {
        const now = service.randomNow(pick);
        if (now !== undefined && 'json' in now) expect(json(now).uuid).toBe(a.uuid);
        expect(service.findNow(b.uuid)).toBeUndefined();
        expect(json((await service.random(pick))!).uuid).toBe(a.uuid);
      }
      expect(await service.find(b.uuid)).toBeNull();
    } finally {
      await other.close();
    }
  });

  it('fills nothing when the entries cannot all fit, answers from the database and keeps the by-UUID reads', async () => {
    const entries = Array.from({ length: 400 }, (_, n) => entry(`Budget entry number ${n}, long enough to weigh something.`, 1_700_000_000 + n, uuidOf(n)));
    t = await createTestApp({ entries });
    const service = serviceOf(t.storage, 20_000);
    const pages = counting(t.storage);
    await service.status();
    service.warm();
    // The fill reads its first page, sees that 400 such entries exceed the budget, and stops there.
    await until(() => pages.pages > 0);
    await new Promise((resolve) => setTimeout(resolve, 100)); // a quiet span: no second page, nothing held
    expect(pages.pages).toBe(1);
    expect(service.stats()).toMatchObject({ entries: 0, complete: false });
    const pick = seededPick('budget');
    for (let i = 0; i < 50; i++) expect(json((await service.random(pick))!).uuid).toMatch(/^0000/);
    for (let n = 0; n < 400; n++) expect(json((await service.find(uuidOf(n)))!.entry).uuid).toBe(uuidOf(n));
    // The last asked for are the ones kept (findNow answers from memory alone without the reads at once of SQLite).
    t.storage.entries.findStoredNow = () => undefined;
    expect(service.findNow(uuidOf(399))).toBeDefined();
    expect(service.findNow(uuidOf(0))).toBeUndefined();
    const { bytes, entries: held } = service.stats();
    expect(bytes).toBeLessThanOrEqual(20_000);
    expect(held).toBeGreaterThan(10);
    expect(held).toBeLessThan(400);
  });

  it('keeps nothing with a budget of 0', async () => {
    const alone = entry('Alone.');
    t = await createTestApp({ entries: [alone] });
    const service = serviceOf(t.storage, 0);
    service.warm();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(json((await service.random(() => 0))!).nonsense).toBe('Alone.');
    expect(json((await service.find(alone.uuid))!.entry).nonsense).toBe('Alone.');
    expect(service.stats()).toMatchObject({ bytes: 0, entries: 0, complete: false });
  });

  it('prepares every entry again when the server variables change', async () => {
    const a = entry('The $ANIMAL$ sleeps.');
    t = await createTestApp({ entries: [a, entry('Plain.')], variables: [{ name: '$ANIMAL$', description: 'An animal.', values: ['cat'] }] });
    const service = serviceOf(t.storage);
    await complete(service);
    expect(json((await service.find(a.uuid))!.entry).nonsense).toBe('The cat sleeps.');
    await t.storage.variables.put({ name: '$ANIMAL$', description: 'An animal.', values: ['owl'] }, 'test');
    expect(json((await service.find(a.uuid))!.entry).nonsense).toBe('The owl sleeps.');
    await complete(service);
    expect(json(service.findNow(a.uuid)!).nonsense).toBe('The owl sleeps.');
  });
});

const postgres = process.env.TEST_DATABASE === 'postgres';

/** Visible entries per block as `entry_counts` holds them (blocks counted 0 left out), and as the entries are. */
async function countsAndTruth(db: Kysely<DB>): Promise<{ kept: Record<number, number>; truth: Record<number, number> }> {
  const kept = await db.selectFrom('entry_counts').select(['block', 'visible']).where('visible', '<>', 0).orderBy('block').execute();
  const truth = await db
    .selectFrom('entries')
    .select([sql<number>`id / 4096`.as('block'), (eb) => eb.fn.countAll<number | string>().as('visible')])
    .where('state', '=', 'visible')
    .groupBy(sql`id / 4096`)
    .execute();
  const byBlock = (rows: { block: number | string; visible: number | string }[]) => Object.fromEntries(rows.map((r) => [Number(r.block), Number(r.visible)]));
  return { kept: byBlock(kept), truth: byBlock(truth) };
}

async function expectExactCounts(db: Kysely<DB>): Promise<Record<number, number>> {
  const { kept, truth } = await countsAndTruth(db);
  expect(kept).toEqual(truth);
  return kept;
}

/**
 * insertSeries adds entries with ids `from` to `to` in one statement (no parameters, so any number of
 * rows), every fifth one hidden.
 */
const insertSeries = (db: Kysely<DB>, from: number, to: number, tag: string) =>
  sql`with recursive n(i) as (select ${sql.lit(from)} union all select i + 1 from n where i < ${sql.lit(to)})
    insert into entries (id, uuid, text, text_key, created_at, state, updated_at)
    select i, ${sql.lit(tag)} || '-' || i, 'Series ' || ${sql.lit(tag)} || ' ' || i, 'series ' || ${sql.lit(tag)} || ' ' || i, i,
      case when i % 5 = 0 then 'hidden' else 'visible' end, 0 from n`.execute(db);

const BLOCK = 4096;

describe('the counts per block', () => {
  it('stay exact through statements of many rows: insert, hide, restore, edit, delete, ids moved across blocks', async () => {
    t = await createTestApp();
    const db = t.database.db;
    // One statement over four blocks (ids 1 to 3 × 4,096 + 10), a fifth of them hidden.
    await insertSeries(db, 1, 3 * BLOCK + 10, 'a');
    const inserted = await expectExactCounts(db);
    expect(Object.keys(inserted).map(Number)).toEqual([0, 1, 2, 3]);
    expect(inserted[3]).toBe(9);
    // Several rows of several blocks hidden in one statement, then shown again.
    await db.updateTable('entries').set({ state: 'hidden' }).where(sql<boolean>`id % 7 = 0`).execute();
    const hidden = await expectExactCounts(db);
    expect(hidden[0]).toBeLessThan(inserted[0]!);
    await db.updateTable('entries').set({ state: 'visible' }).where(sql<boolean>`id % 7 = 0`).where(sql<boolean>`id % 5 <> 0`).execute();
    expect(await expectExactCounts(db)).toEqual(inserted);
    // Updates that change no state: the counts stay as they are.
    await db.updateTable('entries').set({ updated_at: 1 }).execute();
    await db.updateTable('entries').set({ text: sql`text || '!'` }).where('id', '<', 100).execute();
    expect(await expectExactCounts(db)).toEqual(inserted);
    // Rows of every block deleted in one statement, visible and hidden.
    await db.deleteFrom('entries').where(sql<boolean>`id % 3 = 0`).execute();
    const deleted = await expectExactCounts(db);
    expect(deleted[1]).toBeLessThan(inserted[1]!);
    // Ids moved to other blocks (hidden rows among them), and state and id changed in one statement.
    await db.updateTable('entries').set({ id: sql`id + ${sql.lit(5 * BLOCK)}` }).where(sql<boolean>`id % 4 = 1`).execute();
    const moved = await expectExactCounts(db);
    expect(Object.keys(moved).map(Number)).toEqual([0, 1, 2, 3, 5, 6, 7, 8]);
    await db.updateTable('entries').set({ id: sql`id - ${sql.lit(5 * BLOCK)}`, state: 'hidden' }).where('id', '>', 5 * BLOCK).execute();
    await expectExactCounts(db);
    await db.deleteFrom('entries').execute();
    expect(await expectExactCounts(db)).toEqual({});
  }, 60_000);

  // A row trigger writes a version of its block's row per visible row (9,839 here), a statement's
  // trigger one per block it touched.
  it.runIf(postgres)('are written once per block a statement touches, not once per row (PostgreSQL)', async () => {
    t = await createTestApp();
    const db = t.database.db;
    const written = await db.transaction().execute(async (trx) => {
      await insertSeries(trx, 1, 3 * BLOCK + 10, 'b');
      const { rows } = await sql<{ written: number | string }>`select n_tup_ins + n_tup_upd as written
        from pg_stat_xact_user_tables where relname = 'entry_counts'`.execute(trx);
      return Number(rows[0]?.written ?? 0);
    });
    expect(written).toBeGreaterThan(0);
    expect(written).toBeLessThanOrEqual(4);
    await expectExactCounts(db);
  });
});

describe('the random pick', () => {
  it.each([
    ['by the counts per block of ids, without a cache', 0],
    ['by the counts, with a cache holding part', 60_000],
  ])('is uniform over the visible entries, gaps in the ids and all, %s', async (_how, cacheBytes) => {
    // Ids over two blocks of 4,096: eleven twelfths of the first hidden, four fifths of the second deleted.
    const many = Array.from({ length: 4300 }, (_, n) => entry(`Bulk entry number ${n}.`, 1_700_000_000 + n, uuidOf(n)));
    t = await createTestApp({ entries: many });
    const db = t.database.db;
    const hidden = many.filter((_, n) => n < 4095 && n % 12 !== 0).map((e) => e.uuid);
    const deleted = many.filter((_, n) => n >= 4095 && n % 5 !== 0).map((e) => e.uuid);
    for (let i = 0; i < hidden.length; i += 500) await db.updateTable('entries').set({ state: 'hidden' }).where('uuid', 'in', hidden.slice(i, i + 500)).execute();
    await db.deleteFrom('entries').where('uuid', 'in', deleted).execute();
    const service = serviceOf(t.storage, cacheBytes);
    const total = (await service.status()).count;
    expect(total).toBe(4300 - hidden.length - deleted.length);
    const pick = seededPick(`uniform ${cacheBytes}`);
    const hits = new Map<string, number>();
    const each = 5;
    for (let i = 0; i < total * each; i++) {
      const uuid = json((await service.random(pick))!).uuid;
      hits.set(uuid, (hits.get(uuid) ?? 0) + 1);
    }
    // Chi-square against the uniform distribution: mean `total`, six standard deviations above is far in the tail.
    let chi = 0;
    for (const count of hits.values()) chi += (count - each) ** 2 / each;
    chi += (total - hits.size) * each;
    expect(chi).toBeLessThan(total + 6 * Math.sqrt(2 * total));
    for (const uuid of [...hidden, ...deleted]) expect(hits.has(uuid)).toBe(false);
  }, 120_000);
});

describe('the random pick drawn ahead', () => {
  /**
   * drawingAhead makes `service` draw ahead as it does in the app: on SQLite the read workers resolve
   * the draws, on PostgreSQL one query a batch, which the service makes itself. `take` serves picks
   * drawn ahead until `count` were served, and counts them by uuid.
   */
  function drawingAhead(ctx: TestContext, service: EntryService) {
    const workers = ReadWorkers.forDatabase(ctx.config.database);
    let batches = 0;
    if (workers !== null) {
      service.drawsAheadWith((draws, variables) => {
        batches++;
        return workers.draws(draws, variables);
      });
    } else {
      const findByIds = ctx.storage.entries.findByIds.bind(ctx.storage.entries);
      ctx.storage.entries.findByIds = (ids) => {
        batches++;
        return findByIds(ids);
      };
    }
    const pick = seededPick('ahead');
    const take = async (count: number, hits: Map<string, number>) => {
      for (let served = 0; served < count; ) {
        const now = service.randomNow(pick);
        if (now === undefined || !('json' in now)) await service.random(pick);
        else {
          const uuid = json(now).uuid;
          hits.set(uuid, (hits.get(uuid) ?? 0) + 1);
          served++;
        }
        if (served % 50 === 0) await new Promise((resolve) => setImmediate(resolve));
      }
    };
    const started = async () => {
      await service.status();
      await until(async () => {
        if (service.randomNow(pick) === undefined) await service.random(pick);
        return service.stats().ahead > 0;
      });
    };
    return { take, started, batches: () => batches, close: async () => workers?.close() };
  }

  /** chiSquare of the hits against `each` for every one of `expected`, with its bound six standard deviations out. */
  const chiSquare = (hits: Map<string, number>, expected: readonly string[], each: number) => {
    let chi = 0;
    for (const uuid of expected) chi += ((hits.get(uuid) ?? 0) - each) ** 2 / each;
    return { chi, bound: expected.length + 6 * Math.sqrt(2 * expected.length) };
  };

  it('is uniform, read off the event loop in batches, and never serves an entry a newer revision hid', async () => {
    const many = Array.from({ length: 60 }, (_, n) => entry(`Ahead entry number ${n}.`, 1_700_000_000 + n, uuidOf(n)));
    t = await createTestApp({ entries: many });
    const service = serviceOf(t.storage, 0);
    const ahead = drawingAhead(t, service);
    try {
      await ahead.started();
      const each = 100;
      const hits = new Map<string, number>();
      await ahead.take(many.length * each, hits);
      expect(ahead.batches()).toBeGreaterThan(3);
      const { chi, bound } = chiSquare(hits, many.map((e) => e.uuid), each);
      expect(chi).toBeLessThan(bound);

      // Entries drawn before the hide wait in the old revision's batch: none of them is served after it.
      await until(() => service.stats().ahead > 100);
      const victim = uuidOf(5);
      await t.storage.entries.update(victim, { state: 'hidden' }, 'test');
      const after = new Map<string, number>();
      await ahead.take(3000, after);
      expect(after.has(victim)).toBe(false);
      expect(after.size).toBe(many.length - 1);
    } finally {
      await ahead.close();
    }
  }, 60_000);

  it('is uniform where the drawn ids are read together: a full block with gaps beside a sparse one', async () => {
    // The first block of 4,096 ids has every third hidden (its drawn ids are read in one statement a
    // batch, and the misses drawn again); the second holds 204 ids, of which the even ones are deleted.
    const many = Array.from({ length: 4300 }, (_, n) => entry(`Dense entry number ${n}.`, 1_700_000_000 + n, uuidOf(n)));
    t = await createTestApp({ entries: many });
    const db = t.database.db;
    const hidden = many.filter((_, n) => n < 4095 && n % 3 === 1).map((e) => e.uuid);
    const deleted = many.filter((_, n) => n >= 4095 && n % 2 === 0).map((e) => e.uuid);
    for (let i = 0; i < hidden.length; i += 500) await db.updateTable('entries').set({ state: 'hidden' }).where('uuid', 'in', hidden.slice(i, i + 500)).execute();
    await db.deleteFrom('entries').where('uuid', 'in', deleted).execute();
    const gone = new Set([...hidden, ...deleted]);
    const visible = many.map((e) => e.uuid).filter((uuid) => !gone.has(uuid));
    const service = serviceOf(t.storage, 0);
    const ahead = drawingAhead(t, service);
    try {
      await ahead.started();
      const each = 12;
      const hits = new Map<string, number>();
      await ahead.take(visible.length * each, hits);
      // A pick taken while no batch is ready waits for the next (not counted here): every pick counted came from a batch.
      expect(ahead.batches()).toBeGreaterThan((visible.length * each) / 512 / 4);
      for (const uuid of gone) expect(hits.has(uuid), uuid).toBe(false);
      const { chi, bound } = chiSquare(hits, visible, each);
      expect(chi).toBeLessThan(bound);
    } finally {
      await ahead.close();
    }
  }, 60_000);
});

describe('a random request while a batch is being drawn', () => {
  /**
   * gatedDraws resolves batches by the entries' primary keys, each only once `release` is called, and
   * counts the reads the service itself makes on request (on the event loop where the engine reads now).
   */
  function gatedDraws(ctx: TestContext, service: EntryService) {
    const entries = ctx.storage.entries;
    const onRequest = { reads: 0 };
    for (const name of ['findById', 'findByIdNow', 'nthInBlock', 'nthInBlockNow'] as const) {
      const read = (entries[name] as (...args: number[]) => unknown).bind(entries);
      (entries as unknown as Record<string, unknown>)[name] = (...args: number[]) => {
        onRequest.reads++;
        return read(...args);
      };
    }
    const pending: Array<{ draws: readonly Draw[]; settle: (fail: boolean) => void }> = [];
    service.drawsAheadWith(
      (draws, variables) =>
        new Promise<ReadonlyArray<ReadyEntry | null>>((resolve, reject) => {
          pending.push({
            draws,
            settle: (fail) => {
              if (fail) return reject(new Error('the read workers are busy'));
              const encode = entryJsonEncoder(variables);
              const visible = () => ctx.database.db.selectFrom('entries').selectAll().where('state', '=', 'visible');
              // Each draw resolved by its place among its block's visible entries.
              const found = Promise.all(
                draws.map((draw) =>
                  visible().where('id', '>=', draw.block * COUNT_BLOCK).where('id', '<', (draw.block + 1) * COUNT_BLOCK).orderBy('id').limit(1).offset(draw.nth).executeTakeFirst(),
                ),
              );
              found.then((rows) => {
                resolve(rows.map((row) => {
                  if (row === undefined) return null;
                  const json = encode({ uuid: row.uuid, text: row.text, timestamp: Number(row.created_at) });
                  return { json, asciiBytes: asciiBytesOf(json) };
                }));
              }, reject);
            },
          });
        }),
    );
    const release = (fail = false) => pending.splice(0).forEach((batch) => batch.settle(fail));
    return { onRequest, pending, release };
  }

  const settled = async <T>(promise: Promise<T>) => {
    let done = false;
    void promise.then(() => (done = true), () => (done = true));
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    return done;
  };

  it('waits for the batch rather than read on request, and the lane declines meanwhile', async () => {
    const many = Array.from({ length: 50 }, (_, n) => entry(`Waiting entry ${n}.`, 1_700_000_000 + n, uuidOf(n)));
    t = await createTestApp({ entries: many });
    const service = serviceOf(t.storage, 0);
    const gate = gatedDraws(t, service);
    const pick = seededPick('waits');
    const first = service.random(pick);
    const second = service.random(pick);
    await until(() => gate.pending.length > 0);
    expect(await settled(first)).toBe(false);
    // The fast lane has nothing ready and leaves the request to the route, which would wait too.
    expect(service.randomNow(pick)).toBeUndefined();
    expect(gate.onRequest.reads).toBe(0);
    gate.release();
    const picked = await Promise.all([first, second]);
    for (const found of picked) expect(many.map((e) => e.uuid)).toContain(json(found!).uuid);
    expect(gate.onRequest.reads).toBe(0);
    // The batch left the rest of its entries for the next requests, which the lane answers now.
    await until(() => service.stats().ahead > 0);
    const now = service.randomNow(pick);
    expect(now !== undefined && 'json' in now).toBe(true);
  });

  it('draws a small batch first at each revision, the requests waiting after a change, then larger ones up to 512', async () => {
    const many = Array.from({ length: 50 }, (_, n) => entry(`Batch entry ${n}.`, 1_700_000_000 + n, uuidOf(n)));
    t = await createTestApp({ entries: many });
    const service = serviceOf(t.storage, 0);
    const gate = gatedDraws(t, service);
    const sizes: number[] = [];
    const pick = seededPick('sizes');
    /** takes asks for picks until `count` batches were drawn, each released once asked for. */
    const takes = async (count: number) => {
      while (sizes.length < count) {
        const taken = service.random(pick);
        await until(async () => {
          for (const batch of gate.pending) sizes.push(batch.draws.length);
          gate.release();
          return settled(taken);
        });
        expect(await taken).not.toBeNull();
      }
    };
    await takes(7);
    expect(sizes.slice(0, 7)).toEqual([32, 64, 128, 256, 512, 512, 512]);
    // A change: the next revision's batches start small again (the batch asked for last, of the
    // revision before, is let go first).
    gate.release();
    await t.storage.entries.update(many[0]!.uuid, { state: 'hidden' }, 'test');
    sizes.length = 0;
    await takes(2);
    expect(sizes.slice(0, 2)).toEqual([32, 64]);
  });

  it('draws the first batch when warmed, at a start and after each change, before a random request asks', async () => {
    const many = Array.from({ length: 50 }, (_, n) => entry(`Early entry ${n}.`, 1_700_000_000 + n, uuidOf(n)));
    t = await createTestApp({ entries: many });
    const service = serviceOf(t.storage, 0);
    const gate = gatedDraws(t, service);
    service.warm();
    await until(async () => gate.pending.length === 1);
    expect(gate.pending[0]!.draws).toHaveLength(32);
    gate.release();
    expect(await service.random(seededPick('early'))).not.toBeNull();
    expect(gate.onRequest.reads).toBe(0);
    // The next batch, drawn as the first ran low, is let go before the change.
    await until(async () => {
      gate.release();
      return service.stats().ahead > 32;
    });
    // A change: the next warm draws the new revision's first batch, and only one.
    await t.storage.entries.update(many[0]!.uuid, { state: 'hidden' }, 'test');
    service.warm();
    service.warm();
    await until(async () => gate.pending.length > 0);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(gate.pending.map((batch) => batch.draws.length)).toEqual([32]);
    gate.release();
  });

  it('reads its pick on request when the batches are refused', async () => {
    const many = Array.from({ length: 50 }, (_, n) => entry(`Refused entry ${n}.`, 1_700_000_000 + n, uuidOf(n)));
    t = await createTestApp({ entries: many });
    const service = serviceOf(t.storage, 0);
    const gate = gatedDraws(t, service);
    const waiting = service.random(seededPick('refused'));
    // Each batch the request waits for is refused; after a few it reads its own pick.
    await until(async () => {
      gate.release(true);
      return settled(waiting);
    });
    expect(many.map((e) => e.uuid)).toContain(json((await waiting)!).uuid);
    expect(gate.onRequest.reads).toBeGreaterThan(0);
  });
});

describe('the status count', () => {
  it('is right after create, hide, restore, delete and import, kept by the database’s own counts', async () => {
    t = await createTestApp({ entries: [entry('One.'), entry('Two.')] });
    const status = () => t!.app.entryService.status().then((s) => s.count);
    expect(await status()).toBe(2);
    const created = await t.storage.entries.create('Three.', 1_800_000_000, 'test');
    const uuid = 'entry' in created ? created.entry.uuid : '';
    expect(await status()).toBe(3);
    await t.storage.entries.update(uuid, { state: 'hidden' }, 'test');
    expect(await status()).toBe(2);
    await t.storage.entries.update(uuid, { state: 'hidden', text: 'Three, edited while hidden.' }, 'test');
    expect(await status()).toBe(2);
    await t.storage.entries.update(uuid, { state: 'visible' }, 'test');
    expect(await status()).toBe(3);
    await t.storage.entries.update(uuid, { state: 'hidden' }, 'test');
    await t.storage.entries.remove(uuid, 'test');
    expect(await status()).toBe(2);
    const imported = Array.from({ length: 5000 }, (_, n) => entry(`Imported ${n}.`, 1_700_000_000 + n));
    expect(await t.storage.entries.insertEntries(imported)).toMatchObject({ added: 5000 });
    expect(await status()).toBe(5002);
    const [first] = imported;
    await t.storage.entries.remove(first!.uuid, 'test');
    expect(await status()).toBe(5001);
    // The counts agree with a count of the entries themselves.
    const { count } = await t.database.db
      .selectFrom('entries')
      .select((eb) => eb.fn.countAll<number | string>().as('count'))
      .where('state', '=', 'visible')
      .executeTakeFirstOrThrow();
    expect(Number(count)).toBe(5001);
  }, 60_000);

  it('counts the entries already stored when the counts are added (migration 0007)', async () => {
    const fresh = await freshDatabaseUrl(tempDir());
    const database = await openDatabase(loadConfig({ DATABASE_URL: fresh.url }).database);
    try {
      await new Migrator({ db: database.db, provider: migrationProvider }).migrateTo('0006-changes');
      const rows = Array.from({ length: 9000 }, (_, n) => ({
        uuid: uuidOf(n), text: `Stored before ${n}.`, text_key: `stored before ${n}.`, created_at: n, state: n % 4 === 0 ? 'hidden' : 'visible', updated_at: 0,
      }));
      for (let i = 0; i < rows.length; i += 500) await database.db.insertInto('entries').values(rows.slice(i, i + 500) as never).execute();
      expect(await migrate(database)).toEqual(['0007-entry-counts', '0008-galaxy-answers', '0009-entry-counts-by-statement', '0010-entry-counts-by-time']);
      const storage = createStorage(database);
      expect((await storage.entries.status()).count).toBe(6750);
      // And per span of time (migration 0010): every timestamp here is in the first span.
      const spans = await database.db.selectFrom('entry_time_counts').select(['span', 'visible']).execute();
      expect(spans.map((row) => [Number(row.span), Number(row.visible)])).toEqual([[0, 6750]]);
      const blocks = await storage.entries.visibleBlocks();
      expect(blocks.total).toBe(6750);
      expect([...blocks.blocks]).toEqual([0, 1, 2]);
    } finally {
      await database.close();
      await fresh.drop();
    }
  });

  it.runIf(postgres)('counts again when the triggers count by statement (migration 0009, PostgreSQL)', async () => {
    const fresh = await freshDatabaseUrl(tempDir());
    const database = await openDatabase(loadConfig({ DATABASE_URL: fresh.url }).database);
    try {
      const db = database.db;
      await new Migrator({ db, provider: migrationProvider }).migrateTo('0008-galaxy-answers');
      await insertSeries(db, 1, 2 * BLOCK + 100, 'c');
      // Counts gone wrong before the migration: it replaces them with a count of the entries.
      await db.updateTable('entry_counts').set({ visible: sql`visible + 5` }).execute();
      await db.insertInto('entry_counts').values({ block: 40, visible: 3 }).execute();
      expect(await migrate(database)).toEqual(['0009-entry-counts-by-statement', '0010-entry-counts-by-time']);
      expect(Object.keys(await expectExactCounts(db))).toEqual(['0', '1', '2']);
      const { rows } = await sql<{ tgname: string }>`select tgname from pg_trigger
        where tgrelid = 'entries'::regclass and tgname like 'entry_counts%' order by tgname`.execute(db);
      expect(rows.map((r) => r.tgname)).toEqual(['entry_counts_delete', 'entry_counts_insert', 'entry_counts_update']);
      await insertSeries(db, 3 * BLOCK, 3 * BLOCK + 10, 'd');
      expect(Object.keys(await expectExactCounts(db))).toEqual(['0', '1', '2', '3']);
    } finally {
      await database.close();
      await fresh.drop();
    }
  });
});
