import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { openDatabase } from '../../src/db/database.ts';
import { DEMO_DIR, loadDemo } from '../../src/demo/load-demo.ts';
import { isMultiline } from '../../src/domain/text.ts';
import { CLIENT_VARIABLES, seededPick } from '../../src/domain/variables.ts';
import { EntryService } from '../../src/services/entries/index.ts';
import { INSERT_CHUNK, type NewEntry } from '../../src/storage/entries.ts';
import { readRevision } from '../../src/storage/revision.ts';
import { createStorage, type Storage } from '../../src/storage/index.ts';
import { createTestApp, entry, setState, type TestContext } from '../helper.ts';

/** A random pick through the entry service, with the default cache or none (every pick by the database's counts). */
const services = new WeakMap<Storage, Map<number, EntryService>>();
function randomOf(storage: Storage, pick: (length: number) => number, cacheBytes = 64 * 1024 * 1024) {
  let byBudget = services.get(storage);
  if (byBudget === undefined) services.set(storage, (byBudget = new Map()));
  let service = byBudget.get(cacheBytes);
  if (service === undefined) byBudget.set(cacheBytes, (service = new EntryService(storage, { cacheBytes })));
  return service.randomEntry(pick);
}

describe('demo data', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('meets the contract and loads idempotently', async () => {
    const first = await loadDemo(t.storage, DEMO_DIR);
    expect(first.entriesAdded).toBeGreaterThanOrEqual(300);
    expect(first.variablesAdded).toBeGreaterThanOrEqual(5);
    expect(first.emojisAdded).toBeGreaterThanOrEqual(5);

    const rows = await t.database.db.selectFrom('entries').select('text').execute();
    const texts = rows.map((r) => r.text);
    const serverNames = (await t.storage.variables.list()).map((v) => v.name);
    const emojiNames = (await t.storage.emojis.list()).map((e) => e.name);
    const uses = (token: string) => texts.filter((text) => text.includes(token)).length;
    expect(texts.filter((text) => serverNames.some((n) => text.includes(n))).length).toBeGreaterThanOrEqual(20);
    expect(texts.filter((text) => CLIENT_VARIABLES.some((v) => text.includes(v.name))).length).toBeGreaterThanOrEqual(5);
    expect(texts.filter((text) => emojiNames.some((n) => text.includes(`:${n}:`))).length).toBeGreaterThanOrEqual(10);
    expect(texts.filter(isMultiline).length).toBeGreaterThanOrEqual(10);
    for (const name of serverNames) expect(uses(name), name).toBeGreaterThan(0);

    const revision = (await t.storage.entries.status()).revision;
    const second = await loadDemo(t.storage, DEMO_DIR);
    expect(second).toEqual({ entriesAdded: 0, entriesSkipped: first.entriesAdded, variablesAdded: 0, emojisAdded: 0 });
    t.storage.cache.invalidate();
    expect((await t.storage.entries.status()).revision).toBe(revision);
  });
});

describe('entry storage', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ revisionMaxAgeMs: 50 });
  });
  afterAll(() => t.close());

  it('skips entries whose uuid or text (any case, NFC) already exists', async () => {
    const a = entry('Café au lait');
    expect(await t.storage.entries.insertEntries([a])).toEqual({ added: 1, skipped: 0 });
    expect(await t.storage.entries.insertEntries([{ ...a, text: 'Other' }, entry('  CAFE\u0301 AU LAIT ')])).toEqual({ added: 0, skipped: 2 });
  });

  it('sees entries added by another process within the revision max age', async () => {
    const other = await openDatabase(t.config.database);
    try {
      const otherStorage = createStorage(other);
      const before = (await t.storage.entries.status()).count;
      await otherStorage.entries.insertEntries([entry('Written by another process.')]);
      await new Promise((resolve) => setTimeout(resolve, 120));
      expect((await t.storage.entries.status()).count).toBe(before + 1);
    } finally {
      await other.close();
    }
  });

  it('never picks a hidden entry once the revision is read again (within a second), even from a warm cache', async () => {
    const victim = entry('About to be hidden.');
    await t.storage.entries.insertEntries([victim]);
    await randomOf(t.storage, seededPick('warm the cache'));
    // Hide it behind the cache's back: a second connection, so this process's cache is not told.
    const other = await openDatabase(t.config.database);
    await setState(createStorage(other), victim.uuid, 'hidden');
    const hiddenAt = await readRevision(other.db);
    await other.close();
    // Another process's change is seen once this one reads the revision again, at most a second later.
    await expect.poll(() => t.storage.cache.current(), { timeout: 3000 }).toBe(hiddenAt);
    const pick = seededPick('stale');
    for (let i = 0; i < 200; i++) {
      expect((await randomOf(t.storage, pick))?.uuid).not.toBe(victim.uuid);
      expect((await randomOf(t.storage, pick, 0))?.uuid).not.toBe(victim.uuid);
    }
  });

  it('picks uniformly from a larger set with constant work per pick', async () => {
    const cacheBytes = 64 * 1024 * 1024;
    const many = Array.from({ length: 2000 }, (_, i) => entry(`Bulk entry number ${i}`));
    await t.storage.entries.insertEntries(many);
    // Some hidden, and some deleted: the ids in use have gaps.
    for (const gone of many.slice(0, 300)) await t.storage.entries.update(gone.uuid, { state: 'hidden' }, 'test');
    for (const gone of many.slice(300, 600)) await t.storage.entries.remove(gone.uuid, 'test');
    const total = (await t.storage.entries.status()).count;
    const pick = seededPick('uniform');
    const hits = new Map<string, number>();
    const draws = total * 10;
    for (let i = 0; i < draws; i++) {
      const uuid = (await randomOf(t.storage, pick, cacheBytes))!.uuid;
      hits.set(uuid, (hits.get(uuid) ?? 0) + 1);
    }
    // Chi-square against the uniform distribution: mean `total`, six standard deviations above is far in the tail.
    let chi = 0;
    for (const count of hits.values()) chi += (count - 10) ** 2 / 10;
    chi += (total - hits.size) * 10;
    expect(chi).toBeLessThan(total + 6 * Math.sqrt(2 * total));
    // Nothing hidden or deleted was picked.
    for (const gone of many.slice(0, 600)) expect(hits.has(gone.uuid)).toBe(false);
  }, 60_000);
});

describe('inserting many entries at once', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  const uuid = (n: number) => `00000000-0000-4000-9000-${String(n).padStart(12, '0')}`;
  /** The change log after `revision`: type, key and text, by revision. */
  const changesAfter = async (revision: number) =>
    (await t.database.db.selectFrom('changes').select(['revision', 'type', 'key', 'entry']).where('revision', '>', revision).orderBy('revision').execute()).map((row) => ({
      revision: Number(row.revision),
      type: row.type,
      key: row.key,
      text: (JSON.parse(row.entry!) as { nonsense: string }).nonsense,
    }));

  it('on either engine, a statement skips a row that conflicts with an earlier row of the same statement', async () => {
    const { rows } = await sql<{ uuid: string }>`insert into entries (uuid, text, text_key, created_at, state, updated_at) values
      (${uuid(1)}, 'Same statement one', 'same statement one', 1, 'visible', 0),
      (${uuid(1)}, 'Same statement two', 'same statement two', 1, 'visible', 0),
      (${uuid(2)}, 'Same Statement One', 'same statement one', 1, 'visible', 0),
      (${uuid(3)}, 'Same statement three', 'same statement three', 1, 'visible', 0)
      on conflict do nothing returning uuid`.execute(t.database.db);
    expect(rows.map((row) => row.uuid).sort()).toEqual([uuid(1), uuid(3)]);
    const stored = await t.database.db.selectFrom('entries').select(['uuid', 'text']).where('text_key', 'like', 'same statement %').orderBy('uuid').execute();
    expect(stored).toEqual([
      { uuid: uuid(1), text: 'Same statement one' },
      { uuid: uuid(3), text: 'Same statement three' },
    ]);
  });

  it('skips duplicates within one call, by uuid and by text, and logs the added ones in the order given', async () => {
    const before = await t.storage.entries.readRevision();
    const given: NewEntry[] = [
      { uuid: uuid(10), text: 'In one call, first', timestamp: 10 },
      { uuid: uuid(10), text: 'In one call, same uuid', timestamp: 11 },
      { uuid: uuid(11), text: 'IN ONE CALL, FIRST', timestamp: 12 },
      { uuid: uuid(12), text: 'In one call, second', timestamp: 13 },
      // The first of this uuid collides with a stored text and is skipped; the second is new.
      { uuid: uuid(13), text: 'Same statement one', timestamp: 14 },
      { uuid: uuid(13), text: 'In one call, third', timestamp: 15 },
      { uuid: uuid(14), text: 'in one call, second', timestamp: 16 },
    ];
    expect(await t.storage.entries.insertEntries(given)).toEqual({ added: 3, skipped: 4 });
    expect(await changesAfter(before)).toEqual([
      { revision: before + 1, type: 'entry.created', key: uuid(10), text: 'In one call, first' },
      { revision: before + 2, type: 'entry.created', key: uuid(12), text: 'In one call, second' },
      { revision: before + 3, type: 'entry.created', key: uuid(13), text: 'In one call, third' },
    ]);
    expect(await t.storage.entries.readRevision()).toBe(before + 3);
    expect((await t.storage.entries.findAny(uuid(13)))?.text).toBe('In one call, third');
    expect(await t.storage.entries.findAny(uuid(11))).toBeNull();
  });

  it('takes an async iterable of several chunks, with duplicates across chunks, and writes nothing when it throws', async () => {
    const count = 3 * INSERT_CHUNK + 7;
    const before = await t.storage.entries.readRevision();
    let read = 0;
    const written = () => t.database.db.selectFrom('entries').select((eb) => eb.fn.countAll<number | string>().as('n')).where('text', 'like', 'Chunked %').executeTakeFirstOrThrow();
    // Every third entry repeats the text of the one a chunk before it (by another uuid): skipped.
    const textOf = (n: number) => (n % 3 === 2 && n >= INSERT_CHUNK ? `Chunked ${n - INSERT_CHUNK}` : `Chunked ${n}`);
    async function* entries(fail: boolean): AsyncGenerator<NewEntry> {
      for (let n = 0; n < count; n++) {
        read++;
        if (fail && n === count - 1) throw new Error('the file ends early');
        yield { uuid: uuid(1000 + n), text: textOf(n), timestamp: n };
      }
    }
    const insertEntries = t.storage.entries.insertEntries.bind(t.storage.entries);
    await expect(insertEntries(entries(true))).rejects.toThrow('the file ends early');
    expect(Number((await written()).n)).toBe(0);
    expect(await t.storage.entries.readRevision()).toBe(before);
    read = 0;
    const repeats = Array.from({ length: count }, (_, n) => n).filter((n) => textOf(n) !== `Chunked ${n}`).length;
    expect(await insertEntries(entries(false))).toEqual({ added: count - repeats, skipped: repeats });
    expect(read).toBe(count);
    expect(Number((await written()).n)).toBe(count - repeats);
    const logged = await changesAfter(before);
    expect(logged.map((c) => c.key)).toEqual(Array.from({ length: count }, (_, n) => n).filter((n) => textOf(n) === `Chunked ${n}`).map((n) => uuid(1000 + n)));
    expect(logged.map((c) => c.revision)).toEqual(logged.map((_, i) => before + 1 + i));
  });
});

describe('two instances on one database', () => {
  it('see each other’s hides and new variables within two seconds, and never serve a hidden entry after that', async () => {
    const a = await createTestApp();
    const other = await openDatabase(a.config.database);
    try {
      const b = createStorage(other);
      const victim = entry('Seen by both instances.');
      const bystander = entry('Stays visible.');
      await a.storage.entries.insertEntries([victim, bystander]);
      await new Promise((resolve) => setTimeout(resolve, 1100));
      expect((await b.entries.status()).count).toBe(2);
      await randomOf(b, seededPick('warm'));

      await a.storage.entries.update(victim.uuid, { state: 'hidden' }, 'test');
      await a.storage.variables.put({ name: '$SHARED$', description: 'Shared.', values: ['yes'] }, 'test');
      await new Promise((resolve) => setTimeout(resolve, 2000));
      expect((await b.entries.status()).count).toBe(1);
      expect((await b.variables.values()).get('$SHARED$')).toEqual(['yes']);
      const pick = seededPick('after');
      for (let i = 0; i < 100; i++) expect((await randomOf(b, pick))?.uuid).toBe(bystander.uuid);
      expect(await b.entries.findVisible(victim.uuid)).toBeNull();
    } finally {
      await other.close();
      await a.close();
    }
  });
});
