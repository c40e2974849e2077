/**
 * The storage layer: one store per resource, sharing one revision-keyed cache. It knows nothing of
 * HTTP; the routes and the command line both use it.
 */
import type { Database } from '../db/database.ts';
import { EmojiStore } from './emojis.ts';
import { EntryQuery } from './entry-query.ts';
import { EntryStore } from './entries.ts';
import { GalaxyStore } from './galaxy.ts';
import { ModerationLog } from './moderation-log.ts';
import { PageWarming } from './page-warming.ts';
import { ReportStore } from './reports.ts';
import { readRevision, RevisionCache } from './revision.ts';
import { TokenStore } from './tokens.ts';
import { VariableStore } from './variables.ts';

export interface Storage {
  readonly database: Database;
  readonly cache: RevisionCache;
  readonly entries: EntryStore;
  readonly entryQuery: EntryQuery;
  readonly variables: VariableStore;
  readonly emojis: EmojiStore;
  readonly reports: ReportStore;
  readonly tokens: TokenStore;
  readonly moderationLog: ModerationLog;
  readonly galaxy: GalaxyStore;
  /** The writes' page warming (page-warming.ts), given its warmer by the app (read workers). */
  readonly pageWarming: PageWarming;
}

export interface StorageOptions {
  /** How stale the revision may get before it is read again, i.e. how soon other processes' changes show. */
  revisionMaxAgeMs?: number;
}

/** createStorage builds the stores over an open, migrated database. */
export function createStorage(database: Database, options: StorageOptions = {}): Storage {
  const cache = new RevisionCache(() => readRevision(database.db), options.revisionMaxAgeMs ?? 1000);
  const pageWarming = new PageWarming();
  return {
    database,
    cache,
    entries: new EntryStore(database.db, cache, database.quirks, database.readNow, pageWarming),
    entryQuery: new EntryQuery(database.db, database.quirks),
    variables: new VariableStore(database.db, cache),
    emojis: new EmojiStore(database.db, cache),
    reports: new ReportStore(database.db, cache, pageWarming),
    tokens: new TokenStore(database.db),
    moderationLog: new ModerationLog(database.db),
    galaxy: new GalaxyStore(database.db),
    pageWarming,
  };
}
