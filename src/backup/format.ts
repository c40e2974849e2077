/**
 * The backup file format, version 1: JSON Lines (one JSON object per line, UTF-8, `\n` after each),
 * optionally gzip-compressed as a whole. Every record has a `type`:
 *
 *   header     first line: format name and version, when and from which engine and schema it was
 *              made, the change revision, and how many records of each kind follow
 *   variable   a server variable            emoji   a custom emoji, its image in base64
 *   entry      an entry in any state, with its id, uuid, raw text and times
 *   report     a report                     token   an admin token: label, SHA-256 hash, times
 *   log        a moderation log record
 *   end        last line: the counts again, so that a cut-off file is told from a complete one
 *
 * Records come in that order (entries before the reports that point at them). Field names and units
 * are those of the database columns: `created_at` of an entry is Unix seconds, every other time Unix
 * milliseconds. The parsers here check every field, so a damaged or hand-edited file is refused with
 * its line number instead of half-restored.
 */
import { EMOJI_NAME, IMAGE_EXTENSIONS } from '../domain/emojis.ts';
import { checkEntryText } from '../domain/text.ts';
import { parseUuid } from '../domain/uuid.ts';
import { isVariableName } from '../domain/variables.ts';

export const FORMAT_NAME = 'nonsense-backup';
export const FORMAT_VERSION = 1;

/** The kinds of records that hold data, in file order, with the table each comes from. */
export const KINDS = ['variable', 'emoji', 'entry', 'report', 'token', 'log'] as const;
export type Kind = (typeof KINDS)[number];
export type Counts = Record<Kind, number>;

export interface HeaderRecord {
  type: 'header';
  format: typeof FORMAT_NAME;
  version: number;
  /** Unix seconds when the backup was made. */
  created: number;
  engine: 'sqlite' | 'postgres';
  /** The migrations the source database had run, in order. */
  migrations: string[];
  revision: number;
  counts: Counts;
}

export interface VariableRecord {
  type: 'variable';
  name: string;
  description: string;
  values: string[];
  updated_at: number;
}

export interface EmojiRecord {
  type: 'emoji';
  name: string;
  content_type: string;
  /** The image bytes in base64. */
  image: string;
  sha256: string;
  updated_at: number;
}

export interface EntryRecord {
  type: 'entry';
  id: number;
  uuid: string;
  text: string;
  state: 'visible' | 'hidden';
  created_at: number;
  updated_at: number;
}

export interface ReportRecord {
  type: 'report';
  id: string;
  entry_uuid: string;
  reason: string;
  details: string | null;
  status: 'open' | 'accepted' | 'dismissed';
  created_at: number;
  resolved_at: number | null;
  resolved_by: string | null;
}

export interface TokenRecord {
  type: 'token';
  id: number;
  label: string;
  hash: string;
  created_at: number;
  revoked_at: number | null;
}

export interface LogRecord {
  type: 'log';
  id: number;
  at: number;
  actor: string;
  action: string;
  target: string;
  /** The stored JSON text of the details, or null. */
  details: string | null;
}

export interface EndRecord {
  type: 'end';
  counts: Counts;
}

export type DataRecord = VariableRecord | EmojiRecord | EntryRecord | ReportRecord | TokenRecord | LogRecord;
export type BackupRecord = HeaderRecord | DataRecord | EndRecord;

/** BackupFormatError: a line that is not what the format says; `line` is 1-based. */
export class BackupFormatError extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(`line ${line}: ${message}`);
    this.name = 'BackupFormatError';
  }
}

/** zeroCounts is a Counts with every kind at 0. */
export function zeroCounts(): Counts {
  return { variable: 0, emoji: 0, entry: 0, report: 0, token: 0, log: 0 };
}

type Fields = Record<string, unknown>;

const isInteger = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
const isString = (v: unknown, max = 10_000): v is string => typeof v === 'string' && v.length <= max;
const orNull = <T>(check: (v: unknown) => v is T) => (v: unknown): v is T | null => v === null || check(v);
const HEX64 = /^[0-9a-f]{64}$/;
const LABEL = /^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** expectFields checks each named field of a record with its test, naming the first that fails. */
function expectFields(line: number, record: Fields, checks: Record<string, (v: unknown) => boolean>, what: string): void {
  for (const [field, check] of Object.entries(checks)) {
    if (!check(record[field])) {
      const shown = JSON.stringify(record[field]) ?? 'nothing';
      throw new BackupFormatError(line, `the ${what} has no valid "${field}" (got ${shown.length > 60 ? `${shown.slice(0, 57)}...` : shown})`);
    }
  }
}

function countsOf(line: number, value: unknown): Counts {
  if (value === null || typeof value !== 'object') throw new BackupFormatError(line, '"counts" is missing');
  const counts = zeroCounts();
  for (const kind of KINDS) {
    const count = (value as Fields)[kind];
    if (!isInteger(count)) throw new BackupFormatError(line, `"counts" has no valid count of ${kind} records`);
    counts[kind] = count;
  }
  return counts;
}

/** parseHeader checks the first line: this format, a version this code reads. */
export function parseHeader(text: string): HeaderRecord {
  let record: Fields;
  try {
    record = JSON.parse(text) as Fields;
  } catch {
    throw new BackupFormatError(1, 'this is not a backup made by `nonsense backup` (the first line is not JSON)');
  }
  if (record === null || typeof record !== 'object' || record.type !== 'header' || record.format !== FORMAT_NAME) {
    throw new BackupFormatError(1, 'this is not a backup made by `nonsense backup` (no header record)');
  }
  if (record.version !== FORMAT_VERSION) {
    throw new BackupFormatError(1, `the backup has format version ${JSON.stringify(record.version)}; this version of the service reads version ${FORMAT_VERSION}`);
  }
  expectFields(1, record, {
    created: isInteger,
    engine: (v) => v === 'sqlite' || v === 'postgres',
    migrations: (v) => Array.isArray(v) && v.every((m) => isString(m, 200)),
    revision: isInteger,
  }, 'header');
  return { ...(record as unknown as HeaderRecord), counts: countsOf(1, record.counts) };
}

/**
 * parseRecord reads one line after the header: a data record, fully checked, or the end record.
 * Anything else is a BackupFormatError naming the line.
 */
export function parseRecord(text: string, line: number): DataRecord | EndRecord {
  let record: Fields;
  try {
    record = JSON.parse(text) as Fields;
  } catch {
    throw new BackupFormatError(line, 'not valid JSON (is the file damaged?)');
  }
  if (record === null || typeof record !== 'object' || Array.isArray(record)) throw new BackupFormatError(line, 'not a record');
  switch (record.type) {
    case 'variable':
      expectFields(line, record, {
        name: (v) => isString(v, 64) && isVariableName(v),
        description: (v) => isString(v),
        values: (v) => Array.isArray(v) && v.length > 0 && v.every((value) => isString(value)),
        updated_at: isInteger,
      }, 'variable');
      break;
    case 'emoji':
      expectFields(line, record, {
        name: (v) => isString(v, 32) && EMOJI_NAME.test(v),
        content_type: (v) => typeof v === 'string' && v in IMAGE_EXTENSIONS,
        image: (v) => isString(v, 1_000_000) && v.length > 0 && BASE64.test(v),
        sha256: (v) => isString(v, 64) && HEX64.test(v),
        updated_at: isInteger,
      }, 'emoji');
      break;
    case 'entry':
      expectFields(line, record, {
        id: (v) => isInteger(v) && v > 0,
        uuid: (v) => isString(v, 36) && parseUuid(v) === v,
        text: (v) => isString(v) && checkEntryText(v).ok,
        state: (v) => v === 'visible' || v === 'hidden',
        created_at: isInteger,
        updated_at: isInteger,
      }, 'entry');
      break;
    case 'report':
      expectFields(line, record, {
        id: (v) => isString(v, 36) && parseUuid(v) === v,
        entry_uuid: (v) => isString(v, 36) && parseUuid(v) === v,
        reason: (v) => isString(v, 32) && v.length > 0,
        details: orNull((v): v is string => isString(v)),
        status: (v) => v === 'open' || v === 'accepted' || v === 'dismissed',
        created_at: isInteger,
        resolved_at: orNull(isInteger),
        resolved_by: orNull((v): v is string => isString(v, 64)),
      }, 'report');
      break;
    case 'token':
      expectFields(line, record, {
        id: (v) => isInteger(v) && v > 0,
        label: (v) => isString(v, 64) && LABEL.test(v),
        hash: (v) => isString(v, 64) && HEX64.test(v),
        created_at: isInteger,
        revoked_at: orNull(isInteger),
      }, 'token');
      break;
    case 'log':
      expectFields(line, record, {
        id: (v) => isInteger(v) && v > 0,
        at: isInteger,
        actor: (v) => isString(v, 64) && v.length > 0,
        action: (v) => isString(v, 32) && v.length > 0,
        target: (v) => isString(v, 64) && v.length > 0,
        details: orNull((v): v is string => isString(v, 100_000)),
      }, 'log record');
      break;
    case 'end':
      return { type: 'end', counts: countsOf(line, record.counts) };
    default:
      throw new BackupFormatError(line, `unknown record type ${JSON.stringify(record.type)?.slice(0, 40) ?? 'none'}`);
  }
  return record as unknown as DataRecord;
}
