/** Server variables: their values (for substitution) and their descriptions (for the list endpoint). */
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.ts';
import type { ServerVariables } from '../domain/variables.ts';
import { NamedRows, type NamedRow } from './named-rows.ts';
import type { RevisionCache } from './revision.ts';

export interface ServerVariable {
  name: string;
  description: string;
  values: string[];
}

export class VariableStore extends NamedRows<'variables'> {
  constructor(db: Kysely<DB>, cache: RevisionCache) {
    super(db, cache, 'variables', 'variable');
  }

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
  insertMissing(variables: readonly ServerVariable[]): Promise<number> {
    return this.insertMissingRows(variables.map((variable) => ({ name: variable.name, ...variableRow(variable) })));
  }

  /** put creates or replaces a server variable; tells which it did. */
  put(variable: ServerVariable, actor: string): Promise<'created' | 'updated'> {
    return this.putRow(variable.name, variableRow(variable), actor, { description: variable.description, values: variable.values });
  }
}

function variableRow(variable: ServerVariable): NamedRow<'variables'> {
  return { description: variable.description, values_json: JSON.stringify(variable.values), updated_at: Date.now() };
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
