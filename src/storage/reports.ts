/**
 * Reports from readers and their resolution. Accepting a report hides its entry at once and accepts
 * every other open report on that entry; dismissing leaves the entry as it is.
 */
import { randomUUID } from 'node:crypto';
import { PageWarming } from './page-warming.ts';
import type { Kysely } from 'kysely';
import type { DB, EntryState, ReportStatus } from '../db/schema.ts';
import type { ReportCursor, ReportReason } from '../domain/reports.ts';
import { recordAction } from './moderation-log.ts';
import { writeTransaction, type RevisionCache } from './revision.ts';


export interface Report {
  id: string;
  entryUuid: string;
  reason: ReportReason;
  details: string | null;
  status: ReportStatus;
  /** When the report was filed, Unix seconds. */
  createdAtS: number;
  /** When it was accepted or dismissed, Unix seconds. */
  resolvedAtS: number | null;
  resolvedBy: string | null;
}

export interface ReportWithEntry extends Report {
  entry: { uuid: string; text: string; state: EntryState; timestamp: number };
}

export type Resolution = { report: Report } | { notFound: true } | { alreadyResolved: ReportStatus };

type ReportRow = DB['reports'];

// The table keeps milliseconds (they order reports filed within one second); the API speaks seconds.
function toReport(row: ReportRow): Report {
  return {
    id: row.id,
    entryUuid: row.entry_uuid,
    // Only the API writes reports, and it writes only known reasons.
    reason: row.reason as ReportReason,
    details: row.details,
    status: row.status,
    createdAtS: Math.floor(Number(row.created_at) / 1000),
    resolvedAtS: row.resolved_at === null ? null : Math.floor(Number(row.resolved_at) / 1000),
    resolvedBy: row.resolved_by,
  };
}

export class ReportStore {
  constructor(
    private readonly db: Kysely<DB>,
    private readonly cache: RevisionCache,
    private readonly warming = new PageWarming(),
  ) {}

  /** create files a report on a visible entry; null when there is no such visible entry. */
  async create(entryUuid: string, reason: ReportReason, details: string | null): Promise<Report | null> {
    // Anyone may file one: the entry's pages are read off the event loop first, as for an admin's write.
    await this.warming.before({ uuid: entryUuid });
    return this.db.transaction().execute(async (trx) => {
      const entry = await trx.selectFrom('entries').select('uuid').where('uuid', '=', entryUuid).where('state', '=', 'visible').executeTakeFirst();
      if (!entry) return null;
      const row: ReportRow = {
        id: randomUUID(),
        entry_uuid: entryUuid,
        reason,
        details,
        status: 'open',
        created_at: Date.now(),
        resolved_at: null,
        resolved_by: null,
      };
      await trx.insertInto('reports').values(row).execute();
      return toReport(row);
    });
  }

  /** list returns the reports with `status`, oldest first, each with its entry. */
  async list(status: ReportStatus, limit = 1000): Promise<ReportWithEntry[]> {
    return (await this.page(status, { limit })).reports;
  }

  /**
   * page returns up to `limit` reports with `status` after `after` (oldest first, each with its
   * entry), and the position to continue from when more remain.
   */
  async page(status: ReportStatus, { after, limit }: { after?: ReportCursor; limit: number }): Promise<{ reports: ReportWithEntry[]; next: ReportCursor | null }> {
    let query = this.db
      .selectFrom('reports')
      .innerJoin('entries', 'entries.uuid', 'reports.entry_uuid')
      .selectAll('reports')
      .select(['entries.text as entry_text', 'entries.state as entry_state', 'entries.created_at as entry_created_at'])
      .where('reports.status', '=', status);
    if (after !== undefined) {
      query = query.where((eb) =>
        eb.or([eb('reports.created_at', '>', after.createdAtMs), eb.and([eb('reports.created_at', '=', after.createdAtMs), eb('reports.id', '>', after.id)])]),
      );
    }
    // One more than asked tells whether another page exists, without a count.
    const rows = await query.orderBy('reports.created_at', 'asc').orderBy('reports.id', 'asc').limit(limit + 1).execute();
    const last = rows.length > limit ? rows[limit - 1] : undefined;
    return {
      reports: rows.slice(0, limit).map((row) => ({
        ...toReport(row),
        entry: { uuid: row.entry_uuid, text: row.entry_text, state: row.entry_state, timestamp: Number(row.entry_created_at) },
      })),
      next: last === undefined ? null : { createdAtMs: Number(last.created_at), id: last.id },
    };
  }

  /** accept hides the report's entry and accepts every open report on it. */
  async accept(id: string, actor: string): Promise<Resolution> {
    return this.resolve(id, actor, 'accepted');
  }

  /** dismiss closes the report and leaves its entry as it is. */
  async dismiss(id: string, actor: string): Promise<Resolution> {
    return this.resolve(id, actor, 'dismissed');
  }

  private async resolve(id: string, actor: string, status: 'accepted' | 'dismissed'): Promise<Resolution> {
    const existing = await this.db.selectFrom('reports').selectAll().where('id', '=', id).executeTakeFirst();
    if (!existing) return { notFound: true };
    if (existing.status !== 'open') return { alreadyResolved: existing.status };
    const now = Date.now();
    const resolved = await writeTransaction(this.db, this.cache, async (trx, changes) => {
      // Re-checked inside the transaction: two moderators may act on the same report at once.
      const changed = await trx
        .updateTable('reports')
        .set({ status, resolved_at: now, resolved_by: actor })
        .where('id', '=', id)
        .where('status', '=', 'open')
        .executeTakeFirst();
      if (Number(changed.numUpdatedRows) === 0) return undefined;
      if (status === 'accepted') {
        await trx
          .updateTable('reports')
          .set({ status: 'accepted', resolved_at: now, resolved_by: actor })
          .where('entry_uuid', '=', existing.entry_uuid)
          .where('status', '=', 'open')
          .execute();
        const entry = await trx.selectFrom('entries').select('state').where('uuid', '=', existing.entry_uuid).executeTakeFirst();
        await trx.updateTable('entries').set({ state: 'hidden', updated_at: now }).where('uuid', '=', existing.entry_uuid).execute();
        if (entry?.state === 'visible') changes.add('entry.hidden', existing.entry_uuid);
      }
      await recordAction(trx, actor, status === 'accepted' ? 'report.accept' : 'report.dismiss', id, { entry: existing.entry_uuid, reason: existing.reason });
      return true;
    });
    if (!resolved) {
      const current = await this.db.selectFrom('reports').select('status').where('id', '=', id).executeTakeFirstOrThrow();
      return { alreadyResolved: current.status };
    }
    return { report: toReport((await this.db.selectFrom('reports').selectAll().where('id', '=', id).executeTakeFirstOrThrow())) };
  }
}
