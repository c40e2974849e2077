/**
 * The writes that server variables and custom emojis share: both are rows keyed by a name, added in
 * bulk by imports and restores (existing names kept), created or replaced one at a time by the admin
 * API, and removed by name; every admin write bumps the revision and lands in the moderation log.
 */
import type { Insertable, Kysely } from 'kysely';
import type { DB } from '../db/schema.ts';
import { recordAction } from './moderation-log.ts';
import { ChangeRecorder, commitChanges, logsChanges } from './changes.ts';
import { writeTransaction, type RevisionCache } from './revision.ts';

export type NamedTable = 'variables' | 'emojis';

/** A row of a named table without its name, as written. */
export type NamedRow<T extends NamedTable> = Omit<Insertable<DB[T]>, 'name'>;

/** Either table as one shape, so that the same query code writes both. */
interface AnyNamed {
  named: { name: string } & Record<string, unknown>;
}

/** The base of the variable and emoji stores: their shared writes. */
export class NamedRows<T extends NamedTable> {
  private readonly table: 'named';

  constructor(
    protected readonly db: Kysely<DB>,
    protected readonly cache: RevisionCache,
    table: T,
    /** The log's name for one row: `variable` or `emoji` (actions `variable.put`, `emoji.delete`). */
    private readonly kind: string,
  ) {
    this.table = table as NamedTable as 'named';
  }

  /** insertMissing adds the rows whose name does not exist yet, in one transaction; returns how many it added. */
  protected async insertMissingRows(rows: readonly (NamedRow<T> & { name: string })[]): Promise<number> {
    const added = await this.db.transaction().execute(async (trx) => {
      const changes = new ChangeRecorder(trx);
      let count = 0;
      for (const row of rows) {
        const result = await (trx as unknown as Kysely<AnyNamed>)
          .insertInto(this.table)
          .values(row)
          .onConflict((oc) => oc.column('name').doNothing())
          .executeTakeFirst();
        const inserted = Number(result.numInsertedOrUpdatedRows ?? 0);
        if (inserted > 0) changes.add(`${this.kind}.updated` as 'variable.updated' | 'emoji.updated', row.name);
        count += inserted;
      }
      if (count > 0) await commitChanges(trx, changes, logsChanges(this.db));
      return count;
    });
    if (added > 0) this.cache.invalidate();
    return added;
  }

  /** put creates or replaces the row called `name`, logging `details`; tells which it did. */
  protected async putRow(name: string, row: NamedRow<T>, actor: string, details: Record<string, unknown>): Promise<'created' | 'updated'> {
    const outcome = await writeTransaction(this.db, this.cache, async (trx, changes) => {
      const db = trx as unknown as Kysely<AnyNamed>;
      const exists = await db.selectFrom(this.table).select('name').where('name', '=', name).executeTakeFirst();
      if (exists) await db.updateTable(this.table).set(row).where('name', '=', name).execute();
      else await db.insertInto(this.table).values({ ...row, name }).execute();
      await recordAction(trx, actor, `${this.kind}.put`, name, details);
      changes.add(`${this.kind}.updated` as 'variable.updated' | 'emoji.updated', name);
      return exists ? ('updated' as const) : ('created' as const);
    });
    return outcome!;
  }

  /** remove deletes the row called `name`; false when there was none. */
  async remove(name: string, actor: string): Promise<boolean> {
    const removed = await writeTransaction(this.db, this.cache, async (trx, changes) => {
      const result = await (trx as unknown as Kysely<AnyNamed>).deleteFrom(this.table).where('name', '=', name).executeTakeFirst();
      if (Number(result.numDeletedRows) === 0) return undefined;
      await recordAction(trx, actor, `${this.kind}.delete`, name);
      changes.add(`${this.kind}.deleted` as 'variable.deleted' | 'emoji.deleted', name);
      return true;
    });
    return removed === true;
  }
}
