/**
 * The change log (docs/events.md): every change to what the public sees, one row per change at a
 * revision of its own, written in the transaction that makes the change. Writers collect their
 * changes in a `ChangeRecorder`; `commitChanges` takes the revisions for them (the `meta` revision
 * grows by one per change, so the log and the status count alike) and writes the rows. Reports and
 * moderation notes are not changes: nothing the public sees changes with them.
 *
 * Revisions are taken by an update of the one `meta` row, which on PostgreSQL holds that row's lock
 * until the transaction ends: two writers take revisions one after the other and commit in that
 * order, so any snapshot of the log is a prefix of it, and a reader that remembers the last revision it
 * saw misses nothing. On PostgreSQL the commit also notifies the processes that LISTEN
 * (services/change-feed.ts).
 */
import { CompiledQuery, sql, type Kysely } from 'kysely';
import { quirksOf } from '../db/engine.ts';
import type { DB } from '../db/schema.ts';
import { deliverEntry } from '../domain/delivered-entry.ts';
import type { ServerVariables } from '../domain/variables.ts';

export const CHANGE_TYPES = [
  'entry.created',
  'entry.updated',
  'entry.hidden',
  'entry.restored',
  'entry.deleted',
  'variable.updated',
  'variable.deleted',
  'emoji.updated',
  'emoji.deleted',
] as const;
export type ChangeType = (typeof CHANGE_TYPES)[number];

/** The channel PostgreSQL notifies on when changes commit; the payload is the last revision. */
export const CHANGES_CHANNEL = 'nonsense_changes';

/** A change as the API gives it; `entry` is the entry's JSON text, or null. */
export interface Change {
  revision: number;
  type: ChangeType;
  at: number;
  key: string;
  entry: string | null;
}

/** A change not yet given its revision. */
interface PendingChange {
  type: ChangeType;
  key: string;
  entry: string | null;
}

/** Root databases whose writes leave the log out: only to measure what the log costs (bench/events.ts). */
const unlogged = new WeakSet<object>();

/** setChangeLog turns the log on or off for the writes through `db` (on unless turned off). */
export function setChangeLog(db: Kysely<DB>, on: boolean): void {
  if (on) unlogged.delete(db);
  else unlogged.add(db);
}

/** logsChanges tells whether writes through `db` write the log. */
export function logsChanges(db: Kysely<DB>): boolean {
  return !unlogged.has(db);
}

/** readServerVariables reads the server variables within a transaction, for the entries a change carries. */
export async function readServerVariables(trx: Kysely<DB>): Promise<ServerVariables> {
  const rows = await trx.selectFrom('variables').select(['name', 'values_json']).execute();
  return new Map(rows.map((row) => [row.name, JSON.parse(row.values_json) as string[]]));
}

/** entryJson is an entry as by-UUID answers it: `{ uuid, nonsense, original_nonsense?, timestamp }`. */
export function entryJson(entry: { uuid: string; text: string; timestamp: number }, variables: ServerVariables): string {
  return JSON.stringify(deliverEntry(entry, variables));
}

/** ChangeRecorder collects the changes one transaction makes, in order. */
export class ChangeRecorder {
  readonly pending: PendingChange[] = [];
  private variables: ServerVariables | undefined;

  constructor(private readonly trx: Kysely<DB>) {}

  /** add records a change without an entry (hidden, deleted, variables, emojis). */
  add(type: ChangeType, key: string): void {
    this.pending.push({ type, key, entry: null });
  }

  /** addEntry records a change that carries the entry, as by-UUID answers it with the variables as they are in this transaction. */
  async addEntry(type: 'entry.created' | 'entry.updated' | 'entry.restored', entry: { uuid: string; text: string; timestamp: number }): Promise<void> {
    this.variables ??= await readServerVariables(this.trx);
    this.pending.push({ type, key: entry.uuid, entry: entryJson(entry, this.variables) });
  }
}

/**
 * takeRevisions grows the revision by `count` within the transaction and returns the new revision;
 * the changes it is taken for are `revision - count + 1` to `revision`. With `count` 0 it only takes
 * the lock (PostgreSQL), for a writer that numbers its changes as it goes (insertEntries).
 */
export async function takeRevisions(trx: Kysely<DB>, count: number): Promise<number> {
  const row = await trx
    .updateTable('meta')
    .set((eb) => ({ value: eb('value', '+', count) }))
    .where('key', '=', 'revision')
    .returning('value')
    .executeTakeFirstOrThrow();
  return Number(row.value);
}

/** Rows written by one statement: within both engines' limits on parameters. */
export const CHANGE_BATCH = 500;

const insertTexts = new Map<string, string>();

/**
 * insertText is the statement that inserts `count` changes, made once per engine and count: an
 * import writes thousands of full batches, and building the statement anew for each cost more than
 * the database's own work.
 */
function insertText(postgres: boolean, count: number): string {
  const key = `${postgres}:${count}`;
  let text = insertTexts.get(key);
  if (text === undefined) {
    const rows = Array.from({ length: count }, (_, i) => (postgres ? `($${i * 5 + 1}, $${i * 5 + 2}, $${i * 5 + 3}, $${i * 5 + 4}, $${i * 5 + 5})` : '(?, ?, ?, ?, ?)'));
    text = `insert into "changes" ("revision", "type", "at", "key", "entry") values ${rows.join(', ')}`;
    insertTexts.set(key, text);
  }
  return text;
}

/** insertChanges writes numbered changes (in batches) and, on PostgreSQL, notifies the listeners on commit. */
export async function insertChanges(trx: Kysely<DB>, rows: readonly Change[]): Promise<void> {
  if (rows.length === 0) return;
  const postgres = quirksOf(trx as Kysely<unknown>).engine === 'postgres';
  for (let i = 0; i < rows.length; i += CHANGE_BATCH) {
    const batch = rows.slice(i, i + CHANGE_BATCH);
    const parameters: unknown[] = [];
    for (const row of batch) parameters.push(row.revision, row.type, row.at, row.key, row.entry);
    await trx.executeQuery(CompiledQuery.raw(insertText(postgres, batch.length), parameters));
  }
  if (postgres) await notifyListeners(trx, rows[rows.length - 1]!.revision);
}

/** notifyListeners tells the processes that LISTEN (PostgreSQL) that changes up to `revision` commit with this transaction. */
export async function notifyListeners(trx: Kysely<DB>, revision: number): Promise<void> {
  if (quirksOf(trx as Kysely<unknown>).engine === 'postgres') await sql`select pg_notify(${CHANGES_CHANNEL}, ${String(revision)})`.execute(trx);
}

/**
 * commitChanges takes revisions for what `recorder` collected and writes it to the log: one revision
 * per change, and one for a write that changed nothing the public sees (a dismissed report), so the
 * revision still grows with every write. `logged` false leaves the log out (setChangeLog).
 */
export async function commitChanges(trx: Kysely<DB>, recorder: ChangeRecorder, logged = true): Promise<void> {
  const pending = logged ? recorder.pending : [];
  const revision = await takeRevisions(trx, Math.max(1, pending.length));
  const at = Math.floor(Date.now() / 1000);
  const first = revision - pending.length + 1;
  await insertChanges(
    trx,
    pending.map((change, i) => ({ revision: first + i, type: change.type, at, key: change.key, entry: change.entry })),
  );
}

/** The log as readers see it: the changes after a revision, and the revision it is kept from. */
export class ChangeStore {
  constructor(private readonly db: Kysely<DB>) {}

  /** after reads up to `limit` changes with a revision above `since`, in revision order. */
  async after(since: number, limit: number): Promise<Change[]> {
    const rows = await this.db
      .selectFrom('changes')
      .select(['revision', 'type', 'at', 'key', 'entry'])
      .where('revision', '>', since)
      .orderBy('revision')
      .limit(limit)
      .execute();
    return rows.map((row) => ({ revision: Number(row.revision), type: row.type as ChangeType, at: Number(row.at), key: row.key, entry: row.entry }));
  }

  /** floor is the revision the log is kept from: changes at or below it may be gone; a reader behind it starts again from an export. */
  async floor(): Promise<number> {
    const row = await this.db.selectFrom('meta').select('value').where('key', '=', 'changes_floor').executeTakeFirst();
    return Number(row?.value ?? 0);
  }

  /** latestRow is the revision of the newest change in the log, 0 when it is empty. */
  private async latestRow(): Promise<number> {
    const row = await this.db.selectFrom('changes').select((eb) => eb.fn.max('revision').as('revision')).executeTakeFirst();
    return Number(row?.revision ?? 0);
  }

  /** latest is the revision of the newest change in the log, or the floor when the log is empty. */
  async latest(): Promise<number> {
    const row = await this.db.selectFrom('changes').select((eb) => eb.fn.max('revision').as('revision')).executeTakeFirst();
    return row?.revision === null || row?.revision === undefined ? this.floor() : Number(row.revision);
  }

  /**
   * prune removes the changes older than `keepDays` days and all but the newest `keepCount`, at most
   * `batch` at a time (each a short transaction), raising the floor to the last one removed; returns
   * how many it removed. `pause` runs between batches, so that a long prune gives way to requests.
   */
  async prune(keepDays: number, keepCount: number, batch = 1000, pause: () => Promise<void> = async () => {}): Promise<number> {
    const before = Math.floor(Date.now() / 1000) - keepDays * 86_400;
    // Times grow with revisions: the walk from the oldest stops at the first change young enough
    // to keep, having read no more than what goes, and needs no index on `at`.
    const kept = await this.db.selectFrom('changes').select('revision').where('at', '>=', before).orderBy('revision').limit(1).executeTakeFirst();
    const byAge = kept === undefined ? await this.latestRow() : Number(kept.revision) - 1;
    const byCount = await this.db.selectFrom('changes').select('revision').orderBy('revision', 'desc').offset(keepCount).limit(1).executeTakeFirst();
    const cutoff = Math.max(byAge, Number(byCount?.revision ?? 0));
    if (cutoff === 0) return 0;
    let removed = 0;
    for (;;) {
      const done = await this.db.transaction().execute(async (trx) => {
        const last = await trx.selectFrom('changes').select('revision').where('revision', '<=', cutoff).orderBy('revision').offset(batch - 1).limit(1).executeTakeFirst();
        const upTo = last === undefined ? cutoff : Number(last.revision);
        // The floor first: a reader that sees rows gone also sees that they may be.
        await trx.updateTable('meta').set((eb) => ({ value: sql<number>`case when ${eb.ref('value')} < ${upTo} then ${upTo} else ${eb.ref('value')} end` })).where('key', '=', 'changes_floor').execute();
        const result = await trx.deleteFrom('changes').where('revision', '<=', upTo).executeTakeFirst();
        removed += Number(result.numDeletedRows);
        return upTo >= cutoff;
      });
      if (done) return removed;
      await pause();
    }
  }
}
