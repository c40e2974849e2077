/**
 * The change revision: one integer that grows with every write to entries, variables or emojis, in
 * the same transaction as the write. Caches in every process key on it, and clients see it in the status.
 */
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.ts';
import { ChangeRecorder, commitChanges, logsChanges } from './changes.ts';

/** readRevision returns the current revision. */
export async function readRevision(db: Kysely<DB>): Promise<number> {
  const row = await db.selectFrom('meta').select('value').where('key', '=', 'revision').executeTakeFirstOrThrow();
  return Number(row.value);
}

/** bumpRevision increments the revision; call it inside the transaction that makes the change. */
export async function bumpRevision(db: Kysely<DB>): Promise<void> {
  await db.updateTable('meta').set((eb) => ({ value: eb('value', '+', 1) })).where('key', '=', 'revision').execute();
}

/**
 * RevisionCache memoises derived data (variable lists, status, the ids of visible entries) for as long
 * as the revision stays the same. It re-reads the revision at most once per `maxAgeMs`, so changes made
 * by another process or instance show within that time; `invalidate()` makes this process's own
 * writes show at once.
 */
export class RevisionCache {
  private revision = -1;
  private checkedAt = Number.NEGATIVE_INFINITY;
  private checking: Promise<number> | null = null;
  private readonly memo = new Map<string, Promise<unknown>>();

  constructor(
    private readonly read: () => Promise<number>,
    private readonly maxAgeMs = 1000,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * peek returns the revision without waiting when the last read is recent enough to use, else null
   * (then `current()` re-reads it). The hot paths check it before anything asynchronous.
   */
  peek(): number | null {
    return this.now() - this.checkedAt < this.maxAgeMs ? this.revision : null;
  }

  /** current returns the revision, re-reading it when the last read is older than maxAgeMs. */
  async current(): Promise<number> {
    if (this.now() - this.checkedAt < this.maxAgeMs) return this.revision;
    this.checking ??= this.refresh();
    return this.checking;
  }

  private async refresh(): Promise<number> {
    try {
      const revision = await this.read();
      this.checkedAt = this.now();
      if (revision !== this.revision) {
        this.revision = revision;
        this.memo.clear();
      }
      return revision;
    } finally {
      this.checking = null;
    }
  }

  /** get returns the memoised value for `key` at the current revision, loading it when missing. */
  async get<T>(key: string, load: () => Promise<T>): Promise<T> {
    await this.current();
    let value = this.memo.get(key) as Promise<T> | undefined;
    if (value === undefined) {
      value = load();
      this.memo.set(key, value);
      value.catch(() => {
        if (this.memo.get(key) === value) this.memo.delete(key);
      });
    }
    return value;
  }

  /** invalidate forces the next call to re-read the revision (after a write by this process). */
  invalidate(): void {
    this.checkedAt = Number.NEGATIVE_INFINITY;
  }
}

/**
 * writeTransaction runs `change` in a transaction that also bumps the revision and writes the changes
 * `change` records to the change log (storage/changes.ts), then tells this process's cache. When
 * `change` throws or returns `undefined` (nothing to change), nothing is written.
 */
export async function writeTransaction<T>(
  db: Kysely<DB>,
  cache: RevisionCache,
  change: (trx: Kysely<DB>, changes: ChangeRecorder) => Promise<T | undefined>,
): Promise<T | undefined> {
  const logged = logsChanges(db);
  const result = await db.transaction().execute(async (trx) => {
    const recorder = new ChangeRecorder(trx);
    const value = await change(trx, recorder);
    if (value !== undefined) await commitChanges(trx, recorder, logged);
    return value;
  });
  if (result !== undefined) cache.invalidate();
  return result;
}
