/**
 * The append-only list of schema migrations. Never edit or reorder a released migration: add a new
 * file and list it here. Kysely's Migrator records what ran in `kysely_migration` and runs each
 * pending migration in a transaction.
 */
import type { Migration, MigrationProvider } from 'kysely';
import * as m0001 from './0001-initial.ts';
import * as m0002 from './0002-search-index.ts';
import * as m0003 from './0003-moderation.ts';
import * as m0004 from './0004-long-text-keys.ts';
import * as m0005 from './0005-galaxy.ts';
import * as m0006 from './0006-changes.ts';
import * as m0007 from './0007-entry-counts.ts';
import * as m0008 from './0008-galaxy-answers.ts';
import * as m0009 from './0009-entry-counts-by-statement.ts';
import * as m0010 from './0010-entry-counts-by-time.ts';

export const MIGRATIONS: Record<string, Migration> = {
  '0001-initial': m0001,
  '0002-search-index': m0002,
  '0003-moderation': m0003,
  '0004-long-text-keys': m0004,
  '0005-galaxy': m0005,
  '0006-changes': m0006,
  '0007-entry-counts': m0007,
  '0008-galaxy-answers': m0008,
  '0009-entry-counts-by-statement': m0009,
  '0010-entry-counts-by-time': m0010,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => MIGRATIONS,
};
