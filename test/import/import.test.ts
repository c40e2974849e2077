import fs from 'node:fs';
import path from 'node:path';
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSqliteBulkWrites } from '../../src/db/dialects/sqlite-bulk.ts';
import { IMPORT_BATCH, IMPORT_CACHE_BYTES, ImportInterruptedError, importFile } from '../../src/import/import-file.ts';
import type { Storage } from '../../src/storage/index.ts';
import { createTestApp, type TestContext } from '../helper.ts';
import { until } from '../wait.ts';

/** pragma reads one setting of the test database's connection. */
async function pragma(t: TestContext, text: string): Promise<number> {
  return Object.values((await sql.raw(`pragma ${text}`).execute(t.database.db)).rows[0] as object)[0] as number;
}

describe('nonsense import', () => {
  let source: TestContext;
  let target: TestContext;
  const exports: Record<string, string> = {};

  beforeAll(async () => {
    source = await createTestApp({ demo: true });
    target = await createTestApp();
    for (const format of ['csv', 'json', 'txt']) {
      const body = (await source.app.inject(`/api/v1/nonsense?format=${format}`)).body;
      exports[format] = path.join(source.dir, `export.${format}`);
      fs.writeFileSync(exports[format], body);
    }
  });
  afterAll(async () => {
    await source.close();
    await target.close();
  });

  /** The raw texts, uuids and timestamps of a database, from its JSON export. */
  async function contents(t: TestContext) {
    const list = (await t.app.inject('/api/v1/nonsense?format=json')).json() as { uuid: string; nonsense: string; original_nonsense?: string; timestamp: number }[];
    return list.map((e) => [e.uuid, e.original_nonsense ?? e.nonsense, e.timestamp]);
  }

  it('restores a CSV export exactly into an empty database, and is idempotent', async () => {
    const first = await importFile(target.storage, exports.csv!);
    expect(first.added).toBeGreaterThanOrEqual(300);
    expect(first.skipped).toBe(0);
    expect(await contents(target)).toEqual(await contents(source));
    const revision = (await target.app.inject('/api/v1/nonsense/status')).json().revision;
    expect(await importFile(target.storage, exports.csv!)).toMatchObject({ added: 0, skipped: first.added });
    target.storage.cache.invalidate();
    expect((await target.app.inject('/api/v1/nonsense/status')).json().revision).toBe(revision);
  });

  it('keeps the raw text of a CSV round trip, names the variables it lacks, and delivers them once defined', async () => {
    const fresh = await createTestApp();
    try {
      const result = await importFile(fresh.storage, exports.csv!);
      const serverVariables = await source.storage.variables.list();
      const names = new Set(serverVariables.map((v) => v.name));
      // Every entry that uses a server variable is counted under each variable it uses.
      const sourceList = (await source.app.inject('/api/v1/nonsense?format=json')).json() as { uuid: string; original_nonsense?: string }[];
      const expected = new Map<string, number>();
      for (const e of sourceList) {
        for (const name of names) if (e.original_nonsense?.includes(name)) expected.set(name, (expected.get(name) ?? 0) + 1);
      }
      expect(expected.size).toBe(names.size);
      expect(new Map(result.undefinedVariables.map((v) => [v.name, v.entries]))).toEqual(expected);

      // The raw text is stored as it was: the token stays in it, and the entry delivers it literally.
      const withVariable = sourceList.find((e) => [...names].some((name) => e.original_nonsense?.includes(name)))!;
      const stored = await fresh.storage.entries.findAny(withVariable.uuid);
      expect(stored?.text).toBe(withVariable.original_nonsense);
      const literal = (await fresh.app.inject(`/api/v1/nonsense/${withVariable.uuid}`)).json();
      expect(literal.nonsense).toBe(withVariable.original_nonsense);

      // Once the variables exist, the entry is delivered like in the source, with original_nonsense.
      await fresh.storage.variables.insertMissing(serverVariables);
      const delivered = (await fresh.app.inject(`/api/v1/nonsense/${withVariable.uuid}`)).json();
      expect(delivered.original_nonsense).toBe(withVariable.original_nonsense);
      expect(delivered.nonsense).not.toBe(withVariable.original_nonsense);
      expect(await contents(fresh)).toEqual(await contents(source));
    } finally {
      await fresh.close();
    }
  });

  it('reads the JSON export as the same entries', async () => {
    const fresh = await createTestApp();
    try {
      await importFile(fresh.storage, exports.json!);
      expect(await contents(fresh)).toEqual(await contents(source));
      // Exporting again gives the same CSV bytes apart from random variable values.
      const strip = (csv: string) => csv.split('\r\n').filter((line) => !line.includes('$')).join('\n');
      const again = (await fresh.app.inject('/api/v1/nonsense')).body;
      expect(strip(again)).toBe(strip(fs.readFileSync(exports.csv!, 'utf8')));
    } finally {
      await fresh.close();
    }
  });

  it('reads TXT as one new entry per non-empty line, skipping texts that exist', async () => {
    const fresh = await createTestApp();
    try {
      const file = path.join(fresh.dir, 'lines.txt');
      fs.writeFileSync(file, 'First line\r\n\r\nsecond LINE\nFIRST LINE\n');
      expect(await importFile(fresh.storage, file, { now: 1_750_000_000 })).toEqual({ added: 2, skipped: 1, undefinedVariables: [] });
      const list = (await fresh.app.inject('/api/v1/nonsense?format=json')).json();
      expect(list.map((e: { nonsense: string }) => e.nonsense).sort()).toEqual(['First line', 'second LINE']);
      expect(list[0].timestamp).toBe(1_750_000_000);
    } finally {
      await fresh.close();
    }
  });

  it.each([
    ['bad.csv', 'uuid,nonsense,original_nonsense,timestamp\r\n' + 'aaaaaaaa-0000-4000-8000-000000000001,fine,,1\r\n' + 'aaaaaaaa-0000-4000-8000-000000000002,"   ",,2\r\n', /line 3: the text is empty/],
    ['bad-uuid.csv', 'uuid,nonsense,timestamp\nnot-a-uuid,text,1\n', /line 2: "uuid" is not a UUID/],
    ['bad-time.csv', 'uuid,nonsense,timestamp\n,text,1.5\n', /line 2: "timestamp" must be a non-negative integer/],
    ['no-text.csv', 'uuid,text\n,hello\n', /no "nonsense" column/],
    ['broken.csv', 'nonsense,timestamp\n"unclosed,1\n', /not valid CSV/],
    ['bad.json', '[{"nonsense":"ok","timestamp":1},{"nonsense":"bell\\u0007","timestamp":2}]', /item 2: the text contains the control character U\+0007/],
    ['broken.json', '[{"nonsense":"ok"},', /not valid JSON/],
    ['object.json', '{"nonsense":"ok"}', /not valid JSON/],
    ['long.txt', `ok\n${'x'.repeat(2001)}\n`, /line 2: the text has 2001 characters/],
  ])('imports nothing from %s and names the bad row', async (name, content, message) => {
    const file = path.join(target.dir, name);
    fs.writeFileSync(file, content);
    const before = (await target.app.inject('/api/v1/nonsense/status')).json();
    await expect(importFile(target.storage, file)).rejects.toThrow(message);
    target.storage.cache.invalidate();
    expect((await target.app.inject('/api/v1/nonsense/status')).json()).toEqual(before);
  });

  it('names the file and the line in every refusal, the header line for a missing column', async () => {
    const cases: [string, string, string][] = [
      ['columns.csv', 'uuid,text\r\n,hello\r\n', 'line 1: the CSV has no "nonsense" column'],
      ['header-only.csv', 'uuid,text\n', 'line 1: the CSV has no "nonsense" column'],
      ['empty-row.csv', 'nonsense,timestamp\nfine,1\n"  ",2\n', 'line 3: the text is empty'],
      ['far-future.json', '[{"nonsense":"ok","timestamp":9007199254740991}]', 'item 1: "timestamp" must be a non-negative integer (Unix seconds) of at most 15 digits'],
      ['bell.txt', 'fine\nring \u0007\n', 'line 2: the text contains the control character U+0007'],
    ];
    for (const [name, content, message] of cases) {
      const file = path.join(target.dir, name);
      fs.writeFileSync(file, content);
      await expect(importFile(target.storage, file), name).rejects.toThrow(`${file} ${message}`);
    }
  });

  it.each([
    ['huge.txt', 'fine\n', 'line 2: the line is longer than 1,048,576 bytes'],
    ['huge.csv', 'nonsense\nfine\n', 'line 3: the row is longer than 1,048,576 bytes'],
  ])('refuses a line of 600 MB in %s as soon as it passes 1 MiB, naming it', async (name, start, message) => {
    const file = path.join(target.dir, name);
    fs.writeFileSync(file, start);
    // A sparse file: 600 MB of NUL bytes that take no disk space and no time to write.
    fs.truncateSync(file, 600 * 1024 * 1024);
    await expect(importFile(target.storage, file)).rejects.toThrow(`${file} ${message}`);
  });

  it('refuses a JSON item over 1 MiB before assembling it, naming it', async () => {
    const file = path.join(target.dir, 'huge.json');
    fs.writeFileSync(file, `[{"nonsense":"fine"},{"nonsense":"${'a'.repeat(2 * 1024 * 1024)}"},{"nonsense":"also fine"}]`);
    await expect(importFile(target.storage, file)).rejects.toThrow(`${file} item 2: the item is longer than 1,048,576 characters`);
  });

  it('takes the format from --format when the extension does not tell', async () => {
    const file = path.join(target.dir, 'entries.data');
    fs.writeFileSync(file, 'One more line from a data file\n');
    await expect(importFile(target.storage, file)).rejects.toThrow(/--format/);
    expect(await importFile(target.storage, file, { format: 'txt' })).toEqual({ added: 1, skipped: 0, undefinedVariables: [] });
  });

  // Thousands of entries, written twice on a busy machine.
  describe('a file of several batches', { timeout: 120_000 }, () => {
    const rows = IMPORT_BATCH * 2 + 500;
    const uuidOf = (i: number) => `bbbbbbbb-0000-4000-8000-${String(i).padStart(12, '0')}`;
    const csv = (count: number, last = '') =>
      'uuid,nonsense,original_nonsense,timestamp\r\n' +
      Array.from({ length: count }, (_, i) => `${uuidOf(i)},Batch row ${i},,${1_700_000_000 + i}\r\n`).join('') +
      last;
    /** How many entries the export delivers. */
    const exported = async (t: TestContext) => (await t.app.inject('/api/v1/nonsense?format=json')).json().length as number;

    it('writes every entry of a file larger than a batch, and refreshes the statistics on PostgreSQL', async () => {
      const fresh = await createTestApp();
      try {
        const file = path.join(fresh.dir, 'many.csv');
        fs.writeFileSync(file, csv(rows));
        const analyzed = async () => {
          if (fresh.database.quirks.engine !== 'postgres') return 0;
          const { rows: stats } = await sql<{ count: string }>`select analyze_count as count from pg_stat_user_tables where relname = 'entries'`.execute(fresh.database.db);
          return Number(stats[0]!.count);
        };
        const before = await analyzed();
        const result = await importFile(fresh.storage, file);
        expect(result).toEqual({ added: rows, skipped: 0, undefinedVariables: [] });
        expect(await exported(fresh)).toBe(rows);
        if (fresh.database.quirks.engine === 'postgres') expect(await analyzed()).toBeGreaterThan(before);
        expect(await importFile(fresh.storage, file)).toMatchObject({ added: 0, skipped: rows });
      } finally {
        await fresh.close();
      }
    });

    it('on SQLite, checkpoints in its own thread and leaves the connection and the WAL as it found them', async (context) => {
      const fresh = await createTestApp();
      try {
        if (fresh.database.quirks.engine !== 'sqlite') return context.skip();
        const settings = async () => ({ cache: await pragma(fresh, 'cache_size'), autocheckpoint: await pragma(fresh, 'wal_autocheckpoint') });
        const before = await settings();
        const file = path.join(fresh.dir, 'bulk.csv');
        fs.writeFileSync(file, csv(rows));
        let during: { cache: number; autocheckpoint: number } | undefined;
        const entries = new Proxy(fresh.storage.entries, {
          get(target, name, receiver) {
            if (name !== 'insertEntries') return Reflect.get(target, name, receiver) as unknown;
            return async (batch: Parameters<typeof target.insertEntries>[0]) => {
              // The last batch's: the thread starts with the second.
              during = await settings();
              return target.insertEntries(batch);
            };
          },
        });
        expect(await importFile({ ...fresh.storage, entries } as Storage, file)).toMatchObject({ added: rows });
        // While writing: the page cache in KiB (negative), the connection's own checkpoints off.
        expect(during).toEqual({ cache: -IMPORT_CACHE_BYTES / 1024, autocheckpoint: 0 });
        expect(await settings()).toEqual(before);
        // The last batch is in the database file already: a checkpoint finds nothing left to copy.
        const { rows: [state] } = await sql<{ log: number; checkpointed: number }>`pragma wal_checkpoint(PASSIVE)`.execute(fresh.database.db);
        expect(state!.checkpointed).toBe(state!.log);
        expect(await exported(fresh)).toBe(rows);
        // An import of one batch starts no thread: the connection keeps its own checkpoints.
        const small = path.join(fresh.dir, 'small.csv');
        fs.writeFileSync(small, 'uuid,nonsense,original_nonsense,timestamp\r\n00000000-0000-4000-8000-999999999999,One batch only,,1700000000\r\n');
        during = undefined;
        expect(await importFile({ ...fresh.storage, entries } as Storage, small)).toMatchObject({ added: 1 });
        expect(during).toEqual({ cache: -IMPORT_CACHE_BYTES / 1024, autocheckpoint: before.autocheckpoint });
      } finally {
        await fresh.close();
      }
    });

    it('on SQLite, checkpoints on its own connection again when the thread cannot', async (context) => {
      const fresh = await createTestApp();
      try {
        if (fresh.database.quirks.engine !== 'sqlite') return context.skip();
        const autocheckpoint = () => pragma(fresh, 'wal_autocheckpoint');
        const before = await autocheckpoint();
        // The thread's connection opens a file that is not there, and the thread ends.
        const bulk = await startSqliteBulkWrites(fresh.database.db as Kysely<unknown>, path.join(fresh.dir, 'missing', 'gone.db'), { cacheBytes: IMPORT_CACHE_BYTES });
        try {
          // No thread before a batch is committed; the second batch starts it.
          await bulk.beforeBatch();
          expect(await autocheckpoint()).toBe(before);
          bulk.afterBatch();
          await bulk.beforeBatch();
          expect(await autocheckpoint()).toBe(0);
          await until('the writer to take its checkpoints back', async () => {
            await bulk.beforeBatch();
            return (await autocheckpoint()) === before;
          }, { timeoutMs: 10_000 });
          bulk.afterBatch();
        } finally {
          await bulk.end();
        }
        expect(await autocheckpoint()).toBe(before);
      } finally {
        await fresh.close();
      }
    });

    it('imports nothing when a row after several batches is bad', async () => {
      const fresh = await createTestApp();
      try {
        const file = path.join(fresh.dir, 'late-error.csv');
        fs.writeFileSync(file, csv(rows, `${uuidOf(rows)},"  ",,1\r\n`));
        await expect(importFile(fresh.storage, file)).rejects.toThrow(`${file} line ${rows + 2}: the text is empty`);
        expect(await exported(fresh)).toBe(0);
      } finally {
        await fresh.close();
      }
    });

    it('keeps the batches written before an interruption, says how far it got, and the same import adds the rest', async () => {
      const fresh = await createTestApp();
      try {
        const file = path.join(fresh.dir, 'interrupted.csv');
        fs.writeFileSync(file, csv(rows));
        // The second batch's transaction fails, as on a full disk.
        let calls = 0;
        const entries = new Proxy(fresh.storage.entries, {
          get(target, name, receiver) {
            if (name !== 'insertEntries') return Reflect.get(target, name, receiver) as unknown;
            return (batch: Parameters<typeof target.insertEntries>[0]) => {
              if (++calls === 2) return Promise.reject(new Error('database or disk is full'));
              return target.insertEntries(batch);
            };
          },
        });
        const failing = { ...fresh.storage, entries } as Storage;
        const error = await importFile(failing, file).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(ImportInterruptedError);
        expect((error as ImportInterruptedError).message).toBe(
          `${file}: the import stopped while writing (database or disk is full); ${IMPORT_BATCH} entries were added and 0 skipped (already present), ` +
            `through ${file} line ${IMPORT_BATCH + 1}. Run the same command again to import the rest: entries already present are skipped.`,
        );
        expect(await exported(fresh)).toBe(IMPORT_BATCH);
        expect(await importFile(fresh.storage, file)).toMatchObject({ added: rows - IMPORT_BATCH, skipped: IMPORT_BATCH });
        expect(await exported(fresh)).toBe(rows);
      } finally {
        await fresh.close();
      }
    });
  });
});
