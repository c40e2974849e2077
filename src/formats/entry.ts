/**
 * The JSON of an entry as every JSON output writes it: the public shape (domain/delivered-entry.ts)
 * prepared ahead of the requests for it.
 */
import { isAscii } from '../domain/text.ts';
import { mathRandomPick, splitVariables, type PickIndex, type ServerVariables } from '../domain/variables.ts';
import type { DeliveredEntry } from '../domain/delivered-entry.ts';
import type { EntryRecord } from '../domain/records.ts';

/** The media type of an entry's JSON. */
export const ENTRY_JSON_TYPE = 'application/json; charset=utf-8';

/**
 * EntryJsonTemplate is the JSON of an entry whose text has server variables: the text between them
 * prepared, and at each variable its values, JSON-escaped, to pick from per response.
 */
export class EntryJsonTemplate {
  /** Whether every part is ASCII, so that a rendering's length in bytes is its length in characters. */
  readonly ascii: boolean;

  constructor(
    /** Alternating JSON text and escaped value lists, starting and ending with JSON text. */
    readonly parts: readonly (string | readonly string[])[],
  ) {
    this.ascii = parts.every((part) => (typeof part === 'string' ? isAscii(part) : part.every(isAscii)));
  }

  /** render completes the JSON with one value picked for each variable. */
  render(pick: PickIndex = mathRandomPick): string {
    const parts = this.parts;
    let json = parts[0] as string;
    for (let i = 1; i < parts.length; i += 2) {
      const values = parts[i] as readonly string[];
      json += values[pick(values.length)]! + (parts[i + 1] as string);
    }
    return json;
  }

  /** size estimates the memory it holds, in bytes. */
  size(): number {
    let bytes = 32;
    for (const part of this.parts) bytes += typeof part === 'string' ? 16 + part.length : 16;
    return bytes;
  }
}

/** escapeJson is the inside of a JSON string literal holding `text`. */
function escapeJson(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}

/**
 * entryJsonEncoder prepares entries' JSON ahead of the requests for them, for the server variables
 * given: the exact bytes of `deliverEntry`'s object as the response schema serialises it (keys
 * `uuid`, `nonsense`, `timestamp`, then `original_nonsense` when present) when the text has no server
 * variable, else a template that `render` completes. Each variable's values are escaped once.
 */
export function entryJsonEncoder(variables: ServerVariables): (entry: EntryRecord) => string | EntryJsonTemplate {
  const escaped = new Map<readonly string[], readonly string[]>();
  const escapeValues = (values: readonly string[]) => {
    let found = escaped.get(values);
    if (found === undefined) {
      found = values.map(escapeJson);
      escaped.set(values, found);
    }
    return found;
  };
  return (entry) => {
    const { parts, hasVariables } = splitVariables(entry.text, variables);
    const head = `{"uuid":"${escapeJson(entry.uuid)}","nonsense":"`;
    const tail = `","timestamp":${entry.timestamp}${hasVariables ? `,"original_nonsense":${JSON.stringify(entry.text)}` : ''}}`;
    if (parts.length === 1) return head + escapeJson(parts[0] as string) + tail;
    const template: (string | readonly string[])[] = [];
    for (let i = 0; i < parts.length; i += 2) {
      const literal = escapeJson(parts[i] as string);
      template.push(i === 0 ? head + literal : literal);
      if (i + 1 < parts.length) template.push(escapeValues(parts[i + 1] as readonly string[]));
    }
    template[template.length - 1] += tail;
    return new EntryJsonTemplate(template);
  };
}

/** An entry's prepared JSON: the body, or the template of one whose text has server variables. */
export type EntryJson = string | EntryJsonTemplate;

/** asciiBytesOf is a prepared body's length in bytes when it is all ASCII (its length in characters), else undefined. */
export function asciiBytesOf(json: EntryJson): number | undefined {
  return typeof json === 'string' && isAscii(json) ? json.length : undefined;
}

/** Prepared JSON as it crosses to another thread, where a template's class does not survive. */
export type EntryJsonWire = string | { readonly parts: EntryJsonTemplate['parts'] };

/** entryJsonToWire is prepared JSON ready to cross a thread. */
export function entryJsonToWire(json: EntryJson): EntryJsonWire {
  return typeof json === 'string' ? json : { parts: json.parts };
}

/** entryJsonFromWire is prepared JSON that crossed a thread, as it was. */
export function entryJsonFromWire(wire: EntryJsonWire): EntryJson {
  return typeof wire === 'string' ? wire : new EntryJsonTemplate(wire.parts);
}

/** entryRecordOf reads the stored entry back from its prepared JSON: the raw text is `original_nonsense` when present. */
export function entryRecordOf(json: EntryJson): EntryRecord {
  const parsed = JSON.parse(json instanceof EntryJsonTemplate ? json.render(() => 0) : json) as DeliveredEntry;
  return { uuid: parsed.uuid, text: parsed.original_nonsense ?? parsed.nonsense, timestamp: parsed.timestamp };
}

/** renderEntryJson is the body of a prepared entry, its server variables filled in. */
export function renderEntryJson(json: EntryJson, pick: PickIndex = mathRandomPick): string {
  return json instanceof EntryJsonTemplate ? json.render(pick) : json;
}
