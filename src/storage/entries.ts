/**
 * Entries: lookups for the public API, the random pick, the status summary and bulk insertion for
 * the demo data and imports. Only visible entries ever leave this module through the read methods.
 */
import type { Kysely } from 'kysely';
import { prepareQuery } from '../db/prepared.ts';
import type { DB } from '../db/schema.ts';
import { textKey } from '../domain/text.ts';
import { bumpRevision, type RevisionCache } from './revision.ts';

/** An entry as stored: raw text, not yet substituted. */
export interface EntryRecord {
  uuid: string;
  text: string;
  timestamp: number;
}

export interface DatabaseStatus {
  count: number;
  latest_timestamp: number | null;
  latest_uuid: string | null;
  revision: number;
}

/** A new entry for `insertEntries`: text already checked with checkEntryText. */
export interface NewEntry {
  uuid: string;
  text: string;
  timestamp: number;
}

export interface InsertResult {
  added: number;
  /** Entries skipped because their uuid or their text already exists. */
  skipped: number;
}

const RANDOM_ATTEMPTS = 4;

function toRecord(row: { uuid: string; text: string; created_at: number }): EntryRecord {
  return { uuid: row.uuid, text: row.text, timestamp: Number(row.created_at) };
}

export class EntryStore {
  private readonly visibleByUuid;
  private readonly visibleById;

  constructor(
    private readonly db: Kysely<DB>,
    private readonly cache: RevisionCache,
  ) {
    const visible = (db: Kysely<DB>) => db.selectFrom('entries').select(['uuid', 'text', 'created_at']).where('state', '=', 'visible');
    this.visibleByUuid = prepareQuery(db, 1, (db, uuid: string) => visible(db).where('uuid', '=', uuid));
    this.visibleById = prepareQuery(db, 1, (db, id: number) => visible(db).where('id', '=', id));
  }

  /** findVisible returns the visible entry with this (lower-case) uuid, or null. */
  async findVisible(uuid: string): Promise<EntryRecord | null> {
    const [row] = await this.visibleByUuid(this.db, uuid);
    return row ? toRecord(row) : null;
  }

  /**
   * random returns a visible entry chosen uniformly, or null when there is none. It picks from the
   * cached ids of visible entries (one array index, one primary-key lookup), so its cost does not
   * grow with the database; an id whose entry was hidden or deleted meanwhile is re-drawn.
   */
  async random(pick: (length: number) => number): Promise<EntryRecord | null> {
    for (let attempt = 0; attempt < RANDOM_ATTEMPTS; attempt++) {
      const ids = await this.cache.get('visible-ids', () => this.visibleIds());
      if (ids.length === 0) return null;
      const [row] = await this.visibleById(this.db, ids[pick(ids.length)]!);
      if (row) return toRecord(row);
      this.cache.invalidate();
    }
    return null;
  }

  private async visibleIds(): Promise<Float64Array> {
    const rows = await this.db.selectFrom('entries').select('id').where('state', '=', 'visible').execute();
    const ids = new Float64Array(rows.length);
    for (let i = 0; i < rows.length; i++) ids[i] = rows[i]!.id;
    return ids;
  }

  /** status summarises the visible entries, with the current revision. */
  async status(): Promise<DatabaseStatus> {
    return this.cache.get('status', async () => {
      const revision = await this.cache.current();
      const { count } = await this.db
        .selectFrom('entries')
        .select((eb) => eb.fn.countAll<number | string>().as('count'))
        .where('state', '=', 'visible')
        .executeTakeFirstOrThrow();
      const latest = await this.db
        .selectFrom('entries')
        .select(['uuid', 'created_at'])
        .where('state', '=', 'visible')
        .orderBy('created_at', 'desc')
        .orderBy('uuid', 'desc')
        .limit(1)
        .executeTakeFirst();
      return {
        count: Number(count),
        latest_timestamp: latest ? Number(latest.created_at) : null,
        latest_uuid: latest?.uuid ?? null,
        revision,
      };
    });
  }

  /** countAll counts every stored entry, visible or not. */
  async countAll(): Promise<number> {
    const { count } = await this.db
      .selectFrom('entries')
      .select((eb) => eb.fn.countAll<number | string>().as('count'))
      .executeTakeFirstOrThrow();
    return Number(count);
  }

  /**
   * insertEntries adds entries in one transaction, skipping any whose uuid or text (compared as
   * textKey) already exists, so that running it twice changes nothing. The revision grows once when
   * anything was added. If reading `entries` throws, the transaction rolls back: nothing is written.
   */
  async insertEntries(entries: Iterable<NewEntry> | AsyncIterable<NewEntry>): Promise<InsertResult> {
    const result = await this.db.transaction().execute(async (trx) => {
      let added = 0;
      let skipped = 0;
      const now = Date.now();
      for await (const entry of entries) {
        const inserted = await trx
          .insertInto('entries')
          .values({
            uuid: entry.uuid,
            text: entry.text,
            text_key: textKey(entry.text),
            created_at: entry.timestamp,
            state: 'visible',
            updated_at: now,
          })
          .onConflict((oc) => oc.doNothing())
          .executeTakeFirst();
        if (Number(inserted.numInsertedOrUpdatedRows ?? 0) > 0) added++;
        else skipped++;
      }
      if (added > 0) await bumpRevision(trx);
      return { added, skipped };
    });
    if (result.added > 0) this.cache.invalidate();
    return result;
  }
}
