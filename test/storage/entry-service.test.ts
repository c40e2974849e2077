/**
 * The entry service (src/services/entries): its cache of prepared JSON within a budget, complete
 * when every visible entry fits, kept current from the change log without reading every entry again;
 * its random pick by the counts per block of ids; and the status count. On both engines.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Migrator } from 'kysely';
import { loadConfig } from '../../src/config.ts';
import { migrate, openDatabase } from '../../src/db/database.ts';
import { migrationProvider } from '../../src/db/migrations/index.ts';
import { seededPick } from '../../src/domain/variables.ts';
import { entryRecordOf, renderEntryJson } from '../../src/formats/entry.ts';
import { EntryService } from '../../src/services/entries/index.ts';
import { ReadWorkers } from '../../src/services/read-workers/index.ts';
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
  it('is uniform, read off the event loop in batches, and never serves an entry a newer revision hid', async () => {
    const many = Array.from({ length: 60 }, (_, n) => entry(`Ahead entry number ${n}.`, 1_700_000_000 + n, uuidOf(n)));
    t = await createTestApp({ entries: many });
    const service = serviceOf(t.storage, 0);
    // SQLite: the read workers resolve the draws; PostgreSQL: one query a batch, which the service makes itself.
    const workers = ReadWorkers.forDatabase(t.config.database);
    let batches = 0;
    if (workers !== null) {
      service.drawsAheadWith((draws, variables) => {
        batches++;
        return workers.draws(draws, variables);
      });
    } else {
      const findByIds = t.storage.entries.findByIds.bind(t.storage.entries);
      t.storage.entries.findByIds = (ids) => {
        batches++;
        return findByIds(ids);
      };
    }
    try {
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
      await service.status();
      await until(async () => {
        if (service.randomNow(pick) === undefined) await service.random(pick);
        return service.stats().ahead > 0;
      });
      const each = 100;
      const hits = new Map<string, number>();
      await take(many.length * each, hits);
      expect(batches).toBeGreaterThan(3);
      let chi = 0;
      for (const e of many) chi += ((hits.get(e.uuid) ?? 0) - each) ** 2 / each;
      expect(chi).toBeLessThan(many.length + 6 * Math.sqrt(2 * many.length));

      // Entries drawn before the hide wait in the old revision's batch: none of them is served after it.
      await until(() => service.stats().ahead > 100);
      const victim = uuidOf(5);
      await t.storage.entries.update(victim, { state: 'hidden' }, 'test');
      const after = new Map<string, number>();
      await take(3000, after);
      expect(after.has(victim)).toBe(false);
      expect(after.size).toBe(many.length - 1);
    } finally {
      await workers?.close();
    }
  }, 60_000);
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
      expect(await migrate(database)).toEqual(['0007-entry-counts', '0008-galaxy-answers']);
      const storage = createStorage(database);
      expect((await storage.entries.status()).count).toBe(6750);
      const blocks = await storage.entries.visibleBlocks();
      expect(blocks.total).toBe(6750);
      expect([...blocks.blocks]).toEqual([0, 1, 2]);
    } finally {
      await database.close();
      await fresh.drop();
    }
  });
});
