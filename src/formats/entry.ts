/** The public shape of an entry (contract section 1), shared by every JSON output. */
import { mathRandomPick, substitute, type PickIndex, type ServerVariables } from '../domain/variables.ts';
import type { EntryRecord } from '../storage/entries.ts';

export interface DeliveredEntry {
  uuid: string;
  nonsense: string;
  original_nonsense?: string;
  timestamp: number;
}

/**
 * deliverEntry substitutes the server variables of a stored entry; `original_nonsense` is present
 * exactly when the raw text contains a known variable.
 */
export function deliverEntry(entry: EntryRecord, variables: ServerVariables, pick: PickIndex = mathRandomPick): DeliveredEntry {
  const { text, hasVariables } = substitute(entry.text, variables, pick);
  return hasVariables
    ? { uuid: entry.uuid, nonsense: text, original_nonsense: entry.text, timestamp: entry.timestamp }
    : { uuid: entry.uuid, nonsense: text, timestamp: entry.timestamp };
}
