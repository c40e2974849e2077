/** The mapping of a stored entry row to the record every reader gets, shared by the store and the list query. */
import type { EntryRecord } from '../domain/records.ts';

/** toEntryRecord maps a stored row to the record every reader gets. */
export function toEntryRecord(row: { uuid: string; text: string; created_at: number | string }): EntryRecord {
  return { uuid: row.uuid, text: row.text, timestamp: Number(row.created_at) };
}
