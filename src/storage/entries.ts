/**
 * Entries one at a time: the reads the entry service (services/entries) is made of (by uuid, by
 * id, pages by id, the counts per block of ids), the status summary, bulk insertion for the demo data
 * and imports, and the admin's writes. The public reads see visible entries only; findAny, for
 * moderators, sees every state. Lists of entries are read through `entry-query.ts`.
 */
import { CompiledQuery, sql, type Kysely } from 'kysely';
import type { EngineQuirks } from '../db/dialects/quirks.ts';
import { prepareQuery, prepareReadNow, type ReadNow } from '../db/prepared.ts';
import { randomUUID } from 'node:crypto';
import type { DB, EntryState } from '../db/schema.ts';
import { textKey } from '../domain/text.ts';
import { toEntryRecord } from './entry-record.ts';
import { recordAction } from './moderation-log.ts';
import { CHANGE_BATCH, entryJson, insertChanges, logsChanges, readServerVariables, takeRevisions, type Change } from './changes.ts';
import { bumpRevision, readRevision, writeTransaction, type RevisionCache } from './revision.ts';
import { PageWarming } from './page-warming.ts';

import type { EntryRecord } from '../domain/records.ts';

export type { EntryRecord };

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

/** An entry as moderators see it: raw text and state. */
export interface AdminEntry {
  uuid: string;
  text: string;
  state: EntryState;
  timestamp: number;
}

/** The outcome of a write that may collide with an existing text. */
export type EntryWrite = { entry: AdminEntry } | { duplicateOf: string } | { notFound: true };

/**
 * The ids counted per block in `entry_counts`: a block is `id / COUNT_BLOCK`, the formula of the
 * triggers of migrations 0007 and 0009.
 */
export const COUNT_BLOCK = 4096;

/**
 * Entries inserted per statement by insertEntries: 5 parameters each, within both engines' limits
 * (SQLite 32,766, PostgreSQL 65,535), and few enough that a chunk's rows and their uuids are small.
 */
export const INSERT_CHUNK = 500;

const fullChunkTexts = new Map<boolean, string>();

/**
 * insertEntriesText is the statement that inserts `count` visible entries, skipping those that
 * conflict, and returns the uuids of those it added. The one for a full chunk is made once per
 * engine, as storage/changes.ts does for the change log: building it anew for each chunk of an
 * import costs more than the database's work.
 */
function insertEntriesText(postgres: boolean, count: number): string {
  if (count === INSERT_CHUNK) {
    let text = fullChunkTexts.get(postgres);
    if (text === undefined) fullChunkTexts.set(postgres, (text = buildInsertEntriesText(postgres, count)));
    return text;
  }
  return buildInsertEntriesText(postgres, count);
}

function buildInsertEntriesText(postgres: boolean, count: number): string {
  const p = (i: number) => (postgres ? `$${i}` : '?');
  const rows = Array.from({ length: count }, (_, i) => `(${p(i * 5 + 1)}, ${p(i * 5 + 2)}, ${p(i * 5 + 3)}, ${p(i * 5 + 4)}, 'visible', ${p(i * 5 + 5)})`);
  return `insert into "entries" ("uuid", "text", "text_key", "created_at", "state", "updated_at") values ${rows.join(', ')} on conflict do nothing returning "uuid"`;
}

/** A visible entry with its primary key. */
export interface StoredEntry extends EntryRecord {
  id: number;
}

/** The blocks of ids that hold visible entries, in order, each with its number of visible entries. */
export interface VisibleBlocks {
  /** Block numbers (id / COUNT_BLOCK), ascending. */
  readonly blocks: Float64Array;
  /** Per block, the visible entries in it and every block before it. */
  readonly ends: Float64Array;
  /** Every visible entry. */
  readonly total: number;
}

const toStored = (row: { id: number; uuid: string; text: string; created_at: number | string }): StoredEntry => ({ id: Number(row.id), ...toEntryRecord(row) });
const oneStored = (rows: { id: number; uuid: string; text: string; created_at: number | string }[] | undefined) =>
  rows === undefined ? undefined : rows.length === 0 ? null : toStored(rows[0]!);

const visible = (db: Kysely<DB>) => db.selectFrom('entries').select(['id', 'uuid', 'text', 'created_at']).where('state', '=', 'visible');
const byUuid = (db: Kysely<DB>, uuid: string) => visible(db).where('uuid', '=', uuid);
const byId = (db: Kysely<DB>, id: number) => visible(db).where('id', '=', id);
// Within one block of ids by the primary key: the state tested as an expression, which no index
// serves, so that no planner walks the state index instead (every visible entry, then a sort).
const nth = (db: Kysely<DB>, from: number, to: number, n: number) =>
  db
    .selectFrom('entries')
    .select(['id', 'uuid', 'text', 'created_at'])
    .where('id', '>=', from)
    .where('id', '<', to)
    .where(sql<boolean>`state || '' = 'visible'`)
    .orderBy('id')
    .limit(1)
    .offset(n);

/** How many ids one statement of EntryReadsNow.findByIds reads: a batch of random draws (services/entries). */
export const IDS_AT_ONCE = 512;
// By the primary key, the state tested as an expression: with `state = ?` the planner walks the state
// index through every visible entry for each batch instead of probing the ids.
export const visibleByIds = (db: Kysely<DB>, ...ids: number[]) =>
  db
    .selectFrom('entries')
    .select(['id', 'uuid', 'text', 'created_at'])
    .where('id', 'in', ids)
    .where(sql<boolean>`state || '' = 'visible'`);

/**
 * EntryReadsNow: the point reads of visible entries answered at once on a connection that answers
 * in-process (an SQLite file): the event loop's own (EntryStore), or a read worker's, which resolves
 * random draws ahead of the requests (services/entries). Each read is the entry, null when there is
 * none, or undefined when the connection cannot read now (a transaction open on it).
 */
export class EntryReadsNow {
  private readonly byUuid;
  private readonly byId;
  private readonly nth;
  private readonly byIds;

  constructor(
    db: Kysely<DB>,
    private readonly readNow: ReadNow,
  ) {
    this.byUuid = prepareReadNow(db, 1, byUuid);
    this.byId = prepareReadNow(db, 1, byId);
    this.nth = prepareReadNow(db, 3, nth);
    this.byIds = prepareReadNow(db, IDS_AT_ONCE, visibleByIds);
  }

  findStored(uuid: string): StoredEntry | null | undefined {
    return oneStored(this.byUuid(this.readNow, uuid));
  }

  findById(id: number): StoredEntry | null | undefined {
    return oneStored(this.byId(this.readNow, id));
  }

  /** nthInBlock is the `n`th (from 0) visible entry of block `block` (EntryStore.nthInBlock). */
  nthInBlock(block: number, n: number): StoredEntry | null | undefined {
    return oneStored(this.nth(this.readNow, block * COUNT_BLOCK, (block + 1) * COUNT_BLOCK, n));
  }

  /**
   * findByIds is the visible entries among these ids, by id, read IDS_AT_ONCE ids a statement: a
   * statement's probes cost half what as many statements of one id cost. Undefined when the
   * connection cannot read now.
   */
  findByIds(ids: readonly number[]): Map<number, StoredEntry> | undefined {
    const found = new Map<number, StoredEntry>();
    for (let start = 0; start < ids.length; start += IDS_AT_ONCE) {
      const chunk = ids.slice(start, start + IDS_AT_ONCE);
      // One statement of IDS_AT_ONCE parameters; the places left are 0, an id no entry has.
      while (chunk.length < IDS_AT_ONCE) chunk.push(0);
      const rows = this.byIds(this.readNow, ...chunk);
      if (rows === undefined) return undefined;
      for (const row of rows) found.set(Number(row.id), toStored(row));
    }
    return found;
  }
}

export class EntryStore {
  private readonly visibleByUuid;
  private readonly visibleById;
  private readonly afterId;
  private readonly nthVisible;
  /** The reads answered at once, where the engine answers in-process (Database.readNow). */
  private readonly now: EntryReadsNow | undefined;

  constructor(
    private readonly db: Kysely<DB>,
    private readonly cache: RevisionCache,
    private readonly quirks: EngineQuirks,
    /** Reads at once, where the engine answers in-process (Database.readNow). */
    readNow?: ReadNow,
    private readonly warming = new PageWarming(),
  ) {
    this.visibleByUuid = prepareQuery(db, 1, byUuid);
    this.visibleById = prepareQuery(db, 1, byId);
    this.now = readNow === undefined ? undefined : new EntryReadsNow(db, readNow);
    // By primary key alone, visibility checked by the caller: a condition on state would lead the
    // planner to the state index and a sort of every visible entry for each page.
    this.afterId = prepareQuery(db, 2, (db, id: number, limit: number) =>
      db.selectFrom('entries').select(['id', 'uuid', 'text', 'created_at', 'state']).where('id', '>', id).orderBy('id').limit(limit),
    );
    this.nthVisible = prepareQuery(db, 3, nth);
  }

  /** findVisible returns the visible entry with this (lower-case) uuid, or null. */
  async findVisible(uuid: string): Promise<EntryRecord | null> {
    const [row] = await this.visibleByUuid(this.db, uuid);
    return row ? toEntryRecord(row) : null;
  }

  /** findStored returns the visible entry with this (lower-case) uuid and its id, or null. */
  async findStored(uuid: string): Promise<StoredEntry | null> {
    const [row] = await this.visibleByUuid(this.db, uuid);
    return row ? toStored(row) : null;
  }

  /** findById returns the visible entry with this id, or null: one primary-key read. */
  async findById(id: number): Promise<StoredEntry | null> {
    const [row] = await this.visibleById(this.db, id);
    return row ? toStored(row) : null;
  }

  /** readsNow tells whether the *Now reads may answer (an engine that answers in-process). */
  get readsNow(): boolean {
    return this.now !== undefined;
  }

  /**
   * findStoredNow is findStored answered at once: the entry, null when there is none, or undefined
   * when it cannot be read now (another engine, a transaction open on the connection).
   */
  findStoredNow(uuid: string): StoredEntry | null | undefined {
    return this.now?.findStored(uuid);
  }

  /** findByIdNow is findById answered at once, or undefined when it cannot be (as findStoredNow). */
  findByIdNow(id: number): StoredEntry | null | undefined {
    return this.now?.findById(id);
  }

  /** nthInBlockNow is nthInBlock answered at once, or undefined when it cannot be (as findStoredNow). */
  nthInBlockNow(block: number, n: number): StoredEntry | null | undefined {
    return this.now?.nthInBlock(block, n);
  }

  /** findByIds returns the visible entries among these ids (at most a few hundred), by id. */
  async findByIds(ids: readonly number[]): Promise<Map<number, StoredEntry>> {
    if (ids.length === 0) return new Map();
    const rows = await visible(this.db).where('id', 'in', ids).execute();
    return new Map(rows.map((row) => [Number(row.id), toStored(row)]));
  }

  /** findStoredMany returns the visible entries among these uuids (at most a few hundred), in no order. */
  async findStoredMany(uuids: readonly string[]): Promise<StoredEntry[]> {
    if (uuids.length === 0) return [];
    const rows = await this.db
      .selectFrom('entries')
      .select(['id', 'uuid', 'text', 'created_at'])
      .where('state', '=', 'visible')
      .where('uuid', 'in', uuids)
      .execute();
    return rows.map(toStored);
  }

  /**
   * nthInBlock returns the `n`th (from 0) visible entry of block `block` (ids from block ×
   * COUNT_BLOCK), or null when it has fewer: at most COUNT_BLOCK rows walked by the primary key.
   */
  async nthInBlock(block: number, n: number): Promise<StoredEntry | null> {
    const [row] = await this.nthVisible(this.db, block * COUNT_BLOCK, (block + 1) * COUNT_BLOCK, n);
    return row ? toStored(row) : null;
  }

  /**
   * visibleBlocks reads the count of visible entries per block of ids (kept by triggers, migrations
   * 0007 and 0009): one row per COUNT_BLOCK ids in use, whatever the number of entries in each.
   */
  async visibleBlocks(): Promise<VisibleBlocks> {
    const rows = await this.db.selectFrom('entry_counts').select(['block', 'visible']).where('visible', '>', 0).orderBy('block').execute();
    const blocks = new Float64Array(rows.length);
    const ends = new Float64Array(rows.length);
    let total = 0;
    for (let i = 0; i < rows.length; i++) {
      blocks[i] = Number(rows[i]!.block);
      total += Number(rows[i]!.visible);
      ends[i] = total;
    }
    return { blocks, ends, total };
  }

  /**
   * page reads up to `limit` entries with an id above `afterId`, in id order: the next id to read
   * after, and the visible ones among them; `next` is null after the last.
   */
  async page(afterId: number, limit: number): Promise<{ next: number | null; visible: StoredEntry[] }> {
    const rows = await this.afterId(this.db, afterId, limit);
    const visible: StoredEntry[] = [];
    for (const row of rows) if (row.state === 'visible') visible.push(toStored(row));
    return { next: rows.length < limit ? null : Number(rows[rows.length - 1]!.id), visible };
  }

  /** readRevision reads the current revision from the database, past every cache. */
  readRevision(): Promise<number> {
    return readRevision(this.db);
  }

  /**
   * status summarises the visible entries, with the current revision: the count from the counts per
   * block (never a count of the entries), the latest from the state index.
   */
  async status(): Promise<DatabaseStatus> {
    return this.cache.get('status', async () => {
      const revision = await this.cache.current();
      // Through the key's index (`block >= 0` holds for every row): on PostgreSQL, entry_counts may
      // hold many dead row versions until vacuumed (bulk writes under the row triggers of migration
      // 0007, many small writes since), and a sequential scan reads every page of them.
      const { count } = await this.db
        .selectFrom('entry_counts')
        .select((eb) => eb.fn.sum<number | string | null>('visible').as('count'))
        .where('block', '>=', 0)
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
        count: Number(count ?? 0),
        latest_timestamp: latest ? Number(latest.created_at) : null,
        latest_uuid: latest?.uuid ?? null,
        revision,
      };
    });
  }

  /** isEmpty tells whether no entry is stored, visible or not, without counting them. */
  async isEmpty(): Promise<boolean> {
    return (await this.db.selectFrom('entries').select('id').limit(1).executeTakeFirst()) === undefined;
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
   * textKey) already exists, so that running it twice changes nothing. Each entry added is a change
   * of its own (`entry.created`, storage/changes.ts), so the revision grows by the number added, in
   * the order of `entries`. The revision is taken at the start and held to the end (PostgreSQL: the
   * row lock of `meta`), so that the log is written as the entries are, a chunk at a time, in memory
   * independent of their number; other writes wait for the import meanwhile, as they wait for
   * SQLite's write lock. If reading `entries` throws, the transaction rolls back: nothing is written.
   *
   * Each statement inserts up to INSERT_CHUNK entries and returns the uuids of those it added: an
   * entry that conflicts with one stored, or with one before it in the same statement, is left out
   * by `on conflict do nothing`. The uuids in a statement are distinct (a uuid seen again starts the
   * next one), so that each uuid returned names one entry of the input.
   */
  async insertEntries(entries: Iterable<NewEntry> | AsyncIterable<NewEntry>): Promise<InsertResult> {
    const logged = logsChanges(this.db);
    const postgres = this.quirks.engine === 'postgres';
    const result = await this.db.transaction().execute(async (trx) => {
      let added = 0;
      let skipped = 0;
      const now = Date.now();
      const at = Math.floor(now / 1000);
      const base = logged ? await takeRevisions(trx, 0) : 0;
      const variables = logged ? await readServerVariables(trx) : new Map<string, string[]>();
      let batch: Change[] = [];
      let chunk: NewEntry[] = [];
      const uuids = new Set<string>();
      const write = async () => {
        const parameters: unknown[] = [];
        for (const entry of chunk) parameters.push(entry.uuid, entry.text, textKey(entry.text), entry.timestamp, now);
        const { rows } = await trx.executeQuery<{ uuid: string }>(CompiledQuery.raw(insertEntriesText(postgres, chunk.length), parameters));
        const inserted = new Set(rows.map((row) => row.uuid));
        for (const entry of chunk) {
          if (!inserted.has(entry.uuid)) {
            skipped++;
            continue;
          }
          added++;
          if (!logged) continue;
          batch.push({ revision: base + added, type: 'entry.created', at, key: entry.uuid, entry: entryJson(entry, variables) });
          if (batch.length >= CHANGE_BATCH) {
            await insertChanges(trx, batch);
            batch = [];
          }
        }
        chunk = [];
        uuids.clear();
      };
      for await (const entry of entries) {
        if (uuids.has(entry.uuid)) await write();
        chunk.push(entry);
        uuids.add(entry.uuid);
        if (chunk.length >= INSERT_CHUNK) await write();
      }
      if (chunk.length > 0) await write();
      if (added > 0 && logged) {
        await insertChanges(trx, batch);
        await takeRevisions(trx, added);
      } else if (added > 0) await bumpRevision(trx);
      return { added, skipped };
    });
    if (result.added > 0) this.cache.invalidate();
    return result;
  }

  /** findAny returns the entry in any state, or null. */
  async findAny(uuid: string): Promise<AdminEntry | null> {
    const row = await this.db.selectFrom('entries').select(['uuid', 'text', 'state', 'created_at']).where('uuid', '=', uuid).executeTakeFirst();
    return row ? { ...toEntryRecord(row), state: row.state } : null;
  }

  /** create adds a visible entry (text already checked), unless the same text exists. */
  async create(text: string, timestamp: number, actor: string): Promise<EntryWrite> {
    await this.warming.before({ textKey: textKey(text) });
    const result = await writeTransaction(this.db, this.cache, async (trx, changes) => {
      const duplicate = await this.duplicateOf(trx, text);
      if (duplicate !== null) return { duplicateOf: duplicate };
      const entry: AdminEntry = { uuid: randomUUID(), text, state: 'visible', timestamp };
      await trx
        .insertInto('entries')
        .values({ uuid: entry.uuid, text, text_key: textKey(text), created_at: timestamp, state: 'visible', updated_at: Date.now() })
        .execute();
      await recordAction(trx, actor, 'entry.create', entry.uuid, { text });
      await changes.addEntry('entry.created', entry);
      return { entry };
    });
    return result!;
  }

  /** update changes the text and/or the state of an entry. */
  async update(uuid: string, change: { text?: string; state?: EntryState }, actor: string): Promise<EntryWrite> {
    await this.warming.before({ uuid, ...(change.text === undefined ? {} : { textKey: textKey(change.text) }) });
    const result = await writeTransaction(this.db, this.cache, async (trx, changes) => {
      const current = await trx.selectFrom('entries').select(['text', 'state', 'created_at']).where('uuid', '=', uuid).executeTakeFirst();
      if (!current) return { notFound: true as const };
      if (change.text !== undefined && change.text !== current.text) {
        const duplicate = await this.duplicateOf(trx, change.text, uuid);
        if (duplicate !== null) return { duplicateOf: duplicate };
        await trx.updateTable('entries').set({ text: change.text, text_key: textKey(change.text), updated_at: Date.now() }).where('uuid', '=', uuid).execute();
        await recordAction(trx, actor, 'entry.edit', uuid, { from: current.text, to: change.text });
      }
      if (change.state !== undefined && change.state !== current.state) {
        await trx.updateTable('entries').set({ state: change.state, updated_at: Date.now() }).where('uuid', '=', uuid).execute();
        await recordAction(trx, actor, change.state === 'hidden' ? 'entry.hide' : 'entry.show', uuid);
      }
      // What the public sees: a hidden entry's edits are not seen until it is shown again, with its text then.
      const text = change.text ?? current.text;
      const state = change.state ?? current.state;
      const timestamp = Number(current.created_at);
      if (current.state === 'visible' && state === 'hidden') changes.add('entry.hidden', uuid);
      else if (current.state === 'hidden' && state === 'visible') await changes.addEntry('entry.restored', { uuid, text, timestamp });
      else if (state === 'visible' && text !== current.text) await changes.addEntry('entry.updated', { uuid, text, timestamp });
      return { entry: { uuid, text: change.text ?? current.text, state: change.state ?? current.state, timestamp: 0 } };
    });
    if ('entry' in result!) return { entry: (await this.findAny(uuid))! };
    return result!;
  }

  /** remove deletes an entry (and the reports on it); false when there was none. */
  async remove(uuid: string, actor: string): Promise<boolean> {
    await this.warming.before({ uuid });
    const removed = await writeTransaction(this.db, this.cache, async (trx, changes) => {
      const current = await trx.selectFrom('entries').select(['text', 'state']).where('uuid', '=', uuid).executeTakeFirst();
      if (!current) return undefined;
      await trx.deleteFrom('entries').where('uuid', '=', uuid).execute();
      await recordAction(trx, actor, 'entry.delete', uuid, { text: current.text });
      // A hidden entry is in no copy: its deletion changes nothing the public sees.
      if (current.state === 'visible') changes.add('entry.deleted', uuid);
      return true;
    });
    return removed === true;
  }


  private async duplicateOf(trx: Kysely<DB>, text: string, except?: string): Promise<string | null> {
    let query = trx.selectFrom('entries').select('uuid').where(this.quirks.textKeyEquals(textKey(text)));
    if (except !== undefined) query = query.where('uuid', '!=', except);
    return (await query.executeTakeFirst())?.uuid ?? null;
  }
}
