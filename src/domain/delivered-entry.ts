/**
 * An entry as the public gets it, `{ uuid, nonsense, original_nonsense?, timestamp }`: its server
 * variables substituted. The serialisers (formats/) write it; the change log stores it as by-UUID gives it.
 */
import type { EntryRecord } from './records.ts';
import { mathRandomPick, substitute, type PickIndex, type ServerVariables } from './variables.ts';

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
