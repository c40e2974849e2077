import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.ts';
import { DEMO_DIR, loadDemo } from '../../src/demo/load-demo.ts';
import { isMultiline } from '../../src/domain/text.ts';
import { CLIENT_VARIABLES, seededPick } from '../../src/domain/variables.ts';
import { EntryService } from '../../src/services/entries/index.ts';
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
