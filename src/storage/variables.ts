/** Server variables: their values (for substitution) and their descriptions (for the list endpoint). */
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.ts';
import type { ServerVariables } from '../domain/variables.ts';
import { recordAction } from './moderation-log.ts';
import { bumpRevision, writeTransaction, type RevisionCache } from './revision.ts';

export interface ServerVariable {
  name: string;
  description: string;
  values: string[];
}

export class VariableStore {
  constructor(
    private readonly db: Kysely<DB>,
    private readonly cache: RevisionCache,
  ) {}

  /** list returns every server variable, sorted by name. */
  async list(): Promise<readonly ServerVariable[]> {
    return this.cache.get('variables', () => this.read());
  }

  /** readValues reads the token → values map from the database, past the cache. */
  async readValues(): Promise<ServerVariables> {
    return new Map((await this.read()).map((v) => [v.name, v.values]));
  }

  private async read(): Promise<ServerVariable[]> {
    const rows = await this.db.selectFrom('variables').select(['name', 'description', 'values_json']).execute();
    return rows
      .map((row) => ({ name: row.name, description: row.description, values: JSON.parse(row.values_json) as string[] }))
      .sort((a, b) => compareCodePoints(a.name, b.name));
  }

  /** values returns the server variables as a token → values map, for substitution. */
  async values(): Promise<ServerVariables> {
    return this.cache.get('variable-values', async () => new Map((await this.list()).map((v) => [v.name, v.values])));
  }

  /** insertMissing adds the variables whose name does not exist yet; returns how many it added. */
  async insertMissing(variables: readonly ServerVariable[]): Promise<number> {
    const added = await this.db.transaction().execute(async (trx) => {
      let count = 0;
      for (const variable of variables) {
        const result = await trx
          .insertInto('variables')
          .values({
            name: variable.name,
            description: variable.description,
            values_json: JSON.stringify(variable.values),
            updated_at: Date.now(),
          })
          .onConflict((oc) => oc.column('name').doNothing())
          .executeTakeFirst();
        count += Number(result.numInsertedOrUpdatedRows ?? 0);
      }
      if (count > 0) await bumpRevision(trx);
      return count;
    });
    if (added > 0) this.cache.invalidate();
    return added;
  }

  /** put creates or replaces a server variable; tells which it did. */
  async put(variable: ServerVariable, actor: string): Promise<'created' | 'updated'> {
    const outcome = await writeTransaction(this.db, this.cache, async (trx) => {
      const exists = await trx.selectFrom('variables').select('name').where('name', '=', variable.name).executeTakeFirst();
      const row = { description: variable.description, values_json: JSON.stringify(variable.values), updated_at: Date.now() };
      if (exists) await trx.updateTable('variables').set(row).where('name', '=', variable.name).execute();
      else await trx.insertInto('variables').values({ name: variable.name, ...row }).execute();
      await recordAction(trx, actor, 'variable.put', variable.name, { description: variable.description, values: variable.values });
      return exists ? ('updated' as const) : ('created' as const);
    });
    return outcome!;
  }

  /** remove deletes a server variable; false when there was none. */
  async remove(name: string, actor: string): Promise<boolean> {
    const removed = await writeTransaction(this.db, this.cache, async (trx) => {
      const result = await trx.deleteFrom('variables').where('name', '=', name).executeTakeFirst();
      if (Number(result.numDeletedRows) === 0) return undefined;
      await recordAction(trx, actor, 'variable.delete', name);
      return true;
    });
    return removed === true;
  }
}

/** compareCodePoints orders strings by Unicode code point, the order every list of the API uses. */
export function compareCodePoints(a: string, b: string): number {
  const left = a[Symbol.iterator]();
  const right = b[Symbol.iterator]();
  for (;;) {
    const l = left.next();
    const r = right.next();
    if (l.done || r.done) return l.done ? (r.done ? 0 : -1) : 1;
    const diff = l.value.codePointAt(0)! - r.value.codePointAt(0)!;
    if (diff !== 0) return diff;
  }
}
