/**
 * The entry cache (src/storage/entry-cache.ts): a snapshot of the visible entries built in the
 * background and used only at its own revision, a lookup cache within its budget, and the database
 * whenever neither may answer. On both engines.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.ts';
import { seededPick } from '../../src/domain/variables.ts';
import { EntryJsonTemplate, entryJsonEncoder } from '../../src/formats/entry.ts';
import { EntryCache, type EntryCacheOptions, type PreparedEntry } from '../../src/storage/entry-cache.ts';
import { createStorage, type Storage } from '../../src/storage/index.ts';
import { createTestApp, entry, type TestContext } from '../helper.ts';

const MiB = 1024 * 1024;

function options(overrides: Partial<EntryCacheOptions<EntryJsonTemplate>> = {}): EntryCacheOptions<EntryJsonTemplate> {
  return { makeEncoder: entryJsonEncoder, templateSize: (t) => t.size(), snapshotBytes: 64 * MiB, lookupBytes: MiB, ...overrides };
}

function cacheOf(storage: Storage, overrides: Partial<EntryCacheOptions<EntryJsonTemplate>> = {}) {
  return new EntryCache(storage.cache, storage.entries, storage.variables, options(overrides));
}

/** json decodes a prepared entry (its template rendered with a fixed pick). */
function json(prepared: PreparedEntry<EntryJsonTemplate>): { uuid: string; nonsense: string; original_nonsense?: string } {
  const text = prepared instanceof EntryJsonTemplate ? prepared.render(() => 0) : prepared.toString();
  return JSON.parse(text);
}

/** ready waits for the snapshot of the current revision, as requests would keep asking for it. */
async function ready(cache: EntryCache<EntryJsonTemplate>, storage: Storage) {
  for (let i = 0; i < 300; i++) {
    await storage.cache.current();
    const snapshot = cache.snapshotNow();
    if (snapshot !== null) return snapshot;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('no snapshot after 6 s');
}

const uuidOf = (n: number) => `0000${n.toString(16).padStart(4, '0')}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;

let t: TestContext | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe('the entry cache', () => {
  it('builds a snapshot holding every visible entry once, findable by UUID, across pages', async () => {
    // Three pages of 2,048 and a partial one, a tenth with a server variable, a few hidden.
    const entries = Array.from({ length: 6500 }, (_, n) => entry(n % 10 === 0 ? `Entry ${n} and its $ANIMAL$.` : `Entry ${n}.`, 1_700_000_000 + n, uuidOf(n)));
    t = await createTestApp({ entries, variables: [{ name: '$ANIMAL$', description: 'An animal.', values: ['cat', 'goose'] }] });
    for (const n of [3, 2048, 6499]) await t.storage.entries.update(uuidOf(n), { state: 'hidden' }, 'test');
    const cache = cacheOf(t.storage);
    expect(cache.snapshotNow()).toBeNull();
    const snapshot = await ready(cache, t.storage);
    expect(snapshot.count).toBe(6497);

    // Every index once: a uniform pick over the indexes is a uniform pick over the visible entries.
    const seen = new Set<string>();
    for (let i = 0; i < snapshot.count; i++) seen.add(json(snapshot.at(i)).uuid);
    expect(seen.size).toBe(6497);
    for (const n of [3, 2048, 6499]) expect(seen.has(uuidOf(n))).toBe(false);

    for (const n of [0, 1, 2047, 2049, 4096, 6498]) {
      const found = snapshot.find(uuidOf(n));
      expect(json(snapshot.at(found)).uuid).toBe(uuidOf(n));
    }
    expect(json(snapshot.at(snapshot.find(uuidOf(10))))).toEqual({
      uuid: uuidOf(10), nonsense: 'Entry 10 and its cat.', timestamp: 1_700_000_010, original_nonsense: 'Entry 10 and its $ANIMAL$.',
    });
    expect(snapshot.find(uuidOf(3))).toBe(-1);
    expect(snapshot.find(uuidOf(99_999))).toBe(-1);
    expect(snapshot.find('not a uuid')).toBe(-1);
    expect(cache.stats().snapshotBytes).toBeGreaterThan(6497 * 40);
    cache.close();
  }, 60_000);

  it('keeps Latin-1 and wider texts apart, each whole and findable, across pages of both', async () => {
    // A third with characters beyond Latin-1 (more than a page of them), a third Latin-1, a tenth templated.
    const textOf = (n: number) =>
      n % 10 === 0 ? `Entry ${n}: the $ANIMAL$ and the café.` : n % 3 === 0 ? `Entry ${n}: 🦆 漢字 \u{10FFFF}.` : n % 3 === 1 ? `Entry ${n}: crème brûlée, ÿ.` : `Entry ${n}.`;
    const entries = Array.from({ length: 6500 }, (_, n) => entry(textOf(n), 1_700_000_000 + n, uuidOf(n)));
    t = await createTestApp({ entries, variables: [{ name: '$ANIMAL$', description: 'An animal.', values: ['🐈', 'goose'] }] });
    const cache = cacheOf(t.storage);
    const snapshot = await ready(cache, t.storage);
    expect(snapshot.count).toBe(6500);
    const seen = new Set<string>();
    for (let i = 0; i < snapshot.count; i++) {
      const { uuid, nonsense, original_nonsense } = json(snapshot.at(i));
      seen.add(uuid);
      const n = Number.parseInt(uuid.slice(-12), 16);
      expect(original_nonsense ?? nonsense).toBe(textOf(n));
      expect(snapshot.find(uuid)).toBe(i);
      // The byte length comes without a pass over the body for an ASCII body, and only for one.
      const body = snapshot.at(i);
      const ascii = typeof body === 'string' && /^[\x00-\x7f]*$/.test(body);
      expect(snapshot.asciiLength(i)).toBe(ascii ? Buffer.byteLength(body) : undefined);
    }
    expect(seen.size).toBe(6500);
    expect(json(snapshot.at(snapshot.find(uuidOf(20)))).nonsense).toBe('Entry 20: the 🐈 and the café.');
    cache.close();
  }, 60_000);

  it('stops using the snapshot at once when this process hides an entry', async () => {
    const [a, b] = [entry('Stays.'), entry('Goes.')];
    t = await createTestApp({ entries: [a, b] });
    const cache = cacheOf(t.storage);
    await ready(cache, t.storage);
    await t.storage.entries.update(b.uuid, { state: 'hidden' }, 'test');
    expect(cache.snapshotNow()).toBeNull();
    const pick = seededPick('hidden');
    for (let i = 0; i < 50; i++) expect(json((await cache.random(pick))!).uuid).toBe(a.uuid);
    expect(await cache.find(b.uuid)).toBeNull();
    // The next snapshot is of the new revision, without the hidden entry.
    const next = await ready(cache, t.storage);
    expect(next.count).toBe(1);
    expect(next.find(b.uuid)).toBe(-1);
    cache.close();
  });

  it('sees another instance’s hide within the revision’s max age, and never serves it after that', async () => {
    const [a, b] = [entry('Seen by both.'), entry('Hidden by the other.')];
    t = await createTestApp({ entries: [a, b], revisionMaxAgeMs: 300 });
    const other = await openDatabase(t.config.database);
    try {
      const otherStorage = createStorage(other);
      const cache = cacheOf(t.storage);
      await ready(cache, t.storage);
      await otherStorage.entries.update(b.uuid, { state: 'hidden' }, 'test');
      await new Promise((resolve) => setTimeout(resolve, 400));
      const pick = seededPick('other');
      for (let i = 0; i < 50; i++) {
        const snapshot = cache.snapshotNow();
        if (snapshot !== null) expect(snapshot.find(b.uuid)).toBe(-1);
        expect(json((await cache.random(pick))!).uuid).toBe(a.uuid);
      }
      expect(await cache.find(b.uuid)).toBeNull();
      cache.close();
    } finally {
      await other.close();
    }
  });

  it('never installs a snapshot when the entries changed while it was read', async () => {
    const entries = Array.from({ length: 3000 }, (_, n) => entry(`Page entry ${n}.`, 1_700_000_000 + n, uuidOf(n)));
    t = await createTestApp({ entries });
    const other = await openDatabase(t.config.database);
    try {
      const otherStorage = createStorage(other);
      const late = entry('Added while the snapshot was read.', 1_800_000_000, uuidOf(50_000));
      // The other instance adds an entry after the first page was read.
      const page = t.storage.entries.page.bind(t.storage.entries);
      let pages = 0;
      t.storage.entries.page = async (after, limit) => {
        const result = await page(after, limit);
        if (pages++ === 0) await otherStorage.entries.insertEntries([late]);
        return result;
      };
      const cache = cacheOf(t.storage);
      await t.storage.cache.current();
      expect(cache.snapshotNow()).toBeNull();
      // Until this process re-reads the revision, no snapshot may claim the old one.
      for (let i = 0; i < 20; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        const snapshot = cache.snapshotNow();
        if (snapshot !== null) expect(snapshot.count).toBe(3001);
      }
      t.storage.cache.invalidate();
      const snapshot = await ready(cache, t.storage);
      expect(snapshot.count).toBe(3001);
      expect(snapshot.find(late.uuid)).not.toBe(-1);
      cache.close();
    } finally {
      await other.close();
    }
  });

  it('answers from the database above its budget, keeping lookups within theirs', async () => {
    const entries = Array.from({ length: 400 }, (_, n) => entry(`Budget entry number ${n}, long enough to weigh something.`, 1_700_000_000 + n, uuidOf(n)));
    t = await createTestApp({ entries });
    const cache = cacheOf(t.storage, { snapshotBytes: 10_000, lookupBytes: 8_000 });
    await t.storage.cache.current();
    cache.snapshotNow();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(cache.snapshotNow()).toBeNull();
    expect(cache.stats().snapshotBytes).toBe(0);
    const pick = seededPick('budget');
    for (let i = 0; i < 20; i++) expect(json((await cache.random(pick))!).uuid).toMatch(/^0000/);
    for (let n = 0; n < 400; n++) expect(json((await cache.find(uuidOf(n)))!.entry).uuid).toBe(uuidOf(n));
    const { lookupBytes, lookupEntries } = cache.stats();
    expect(lookupBytes).toBeLessThanOrEqual(8_000);
    expect(lookupEntries).toBeGreaterThan(10);
    expect(lookupEntries).toBeLessThan(400);
    cache.close();
  });

  it('builds nothing with a budget of 0', async () => {
    t = await createTestApp({ entries: [entry('Alone.')] });
    const cache = cacheOf(t.storage, { snapshotBytes: 0, lookupBytes: 0 });
    await t.storage.cache.current();
    expect(cache.snapshotNow()).toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(cache.snapshotNow()).toBeNull();
    expect(json((await cache.random(() => 0))!).nonsense).toBe('Alone.');
    expect(cache.stats()).toEqual({ snapshotBytes: 0, snapshotEntries: 0, lookupBytes: 0, lookupEntries: 0 });
    cache.close();
  });
});
