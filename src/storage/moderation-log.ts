/** The moderation log: who (a token's label) did what to which entry, variable, emoji or report, and when. */
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.ts';

export interface LogRecord {
  id: number;
  /** When it happened, Unix seconds. */
  atS: number;
  actor: string;
  action: string;
  target: string;
  details: Record<string, unknown> | null;
}

/** recordAction appends to the log; call it inside the transaction that makes the change. */
export async function recordAction(
  trx: Kysely<DB>,
  actor: string,
  action: string,
  target: string,
  details?: Record<string, unknown>,
): Promise<void> {
  await trx
    .insertInto('moderation_log')
    .values({ at: Date.now(), actor, action, target, details: details ? JSON.stringify(details) : null })
    .execute();
}

export class ModerationLog {
  constructor(private readonly db: Kysely<DB>) {}

  /** list returns the newest records first, `limit` at most, older than `beforeId` when given. */
  async list(limit: number, beforeId?: number): Promise<LogRecord[]> {
    let query = this.db.selectFrom('moderation_log').selectAll().orderBy('id', 'desc').limit(limit);
    if (beforeId !== undefined) query = query.where('id', '<', beforeId);
    const rows = await query.execute();
    return rows.map((row) => ({
      id: row.id,
      // The table keeps milliseconds; the API speaks seconds.
      atS: Math.floor(Number(row.at) / 1000),
      actor: row.actor,
      action: row.action,
      target: row.target,
      details: row.details === null ? null : (JSON.parse(row.details) as Record<string, unknown>),
    }));
  }
}
