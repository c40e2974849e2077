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
 *
 * A backup is trusted no more than a request: every record is held to the rules the admin API applies
 * to the same data, with the same functions (domain/: the text rules, the variable grammar, the emoji
 * image check, the report reasons; schemas/admin.ts: the variable body), and texts are stored as the
 * API stores them: trimmed. Ids must fit the smaller of the two engines' id columns, and times a date.
 */
import { createHash } from 'node:crypto';
import { checkEmojiImage, EMOJI_NAME, IMAGE_EXTENSIONS, MAX_EMOJI_BYTES } from '../domain/emojis.ts';
import { REPORT_REASONS } from '../domain/reports.ts';
import { checkDetails, checkEntryText, checkLine, MAX_DETAILS_LENGTH } from '../domain/text.ts';
import { parseUuid } from '../domain/uuid.ts';
import { serverVariableProblem } from '../domain/variables.ts';
import { describeValidation } from '../schemas/validation-wording.ts';
import { VariableBody } from '../schemas/admin.ts';
import { MAX_TIMESTAMP } from '../schemas/api.ts';
import { compileRequestSchema, type RequestValidator } from '../schemas/validator.ts';
import { LABEL_PATTERN } from '../storage/tokens.ts';

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

/**
 * The largest id restored: PostgreSQL's `integer` columns (entries, tokens, log) hold no more, and
 * SQLite's larger ones would let the next ids pass Number.MAX_SAFE_INTEGER, where two ids read alike.
 */
export const MAX_ROW_ID = 2_147_483_647;
/** The latest time a JavaScript Date holds, in milliseconds: a later one cannot be shown as a date. */
export const MAX_TIME_MS = 8_640_000_000_000_000;
/** The largest revision restored: every write adds one, and it must stay an exact integer for as long. */
export const MAX_REVISION = 2 ** 52;
/** The longest base64 text of an emoji image: MAX_EMOJI_BYTES encoded. */
const MAX_EMOJI_BASE64 = Math.ceil(MAX_EMOJI_BYTES / 3) * 4;

const isInteger = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
const isString = (v: unknown, max = 10_000): v is string => typeof v === 'string' && v.length <= max;
const orNull = <T>(check: (v: unknown) => v is T) => (v: unknown): v is T | null => v === null || check(v);
const isTimeMs = (v: unknown): v is number => isInteger(v) && v <= MAX_TIME_MS;
const isRowId = (v: unknown): v is number => isInteger(v) && v >= 1 && v <= MAX_ROW_ID;
const isLabel = (v: unknown): v is string => isString(v, 64) && LABEL_PATTERN.test(v);
const HEX64 = /^[0-9a-f]{64}$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** A field's test: true when it is acceptable, else false or the reason in words. */
type Check = (v: unknown) => boolean | string;

/** shown writes a value for a message, shortened. */
function shown(value: unknown): string {
  const text = JSON.stringify(value) ?? 'nothing';
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** named is how messages name a record: its kind, and its key when the key itself is valid ("the entry 1b4e…"). */
function named(what: string, key: string | number | undefined): string {
  return key === undefined ? `the ${what}` : `the ${what} ${key}`;
}

/** expectFields checks each named field of a record with its test, naming the record and the first field that fails. */
function expectFields(line: number, record: Fields, checks: Record<string, Check>, what: string, key?: string | number): void {
  for (const [field, check] of Object.entries(checks)) {
    const result = check(record[field]);
    if (result === true) continue;
    throw new BackupFormatError(
      line,
      typeof result === 'string' ? `${named(what, key)} has no valid "${field}": ${result}` : `${named(what, key)} has no valid "${field}" (got ${shown(record[field])})`,
    );
  }
}

/** keyOf gives a record's key for messages when it passes `valid`, else undefined (the key itself is what is wrong). */
function keyOf(value: unknown, valid: (v: unknown) => boolean): string | number | undefined {
  return valid(value) ? (value as string | number) : undefined;
}

/** A reason from domain/ as it reads inside a message: without a capital or a final period. */
const asClause = (reason: string) => reason.charAt(0).toLowerCase() + reason.slice(1).replace(/\.$/, '');

let variableBody: RequestValidator | undefined;

/**
 * checkVariable holds a variable record to what `PUT /api/v1/admin/variables/<name>` accepts (its
 * body schema, the name's grammar, the single-line rule) and returns it as that route stores it.
 */
function checkVariable(line: number, record: Fields): VariableRecord {
  const key = keyOf(record.name, (v) => isString(v, 100) && serverVariableProblem(v) === null);
  expectFields(line, record, {
    name: (v) => {
      if (!isString(v, 100)) return false;
      const problem = serverVariableProblem(v);
      return problem === null || asClause(problem);
    },
  }, 'variable');
  variableBody ??= compileRequestSchema({ schema: VariableBody, httpPart: 'body' });
  if (variableBody({ description: record.description, values: record.values }) === false) {
    throw new BackupFormatError(line, `${named('variable', key)} is not acceptable: ${asClause(describeValidation(variableBody.errors ?? [], 'body').detail)}`);
  }
  const description = checkLine(record.description as string, true);
  if (!description.ok) throw new BackupFormatError(line, `${named('variable', key)} has no valid "description": ${description.reason}`);
  const values: string[] = [];
  for (const [index, raw] of (record.values as string[]).entries()) {
    const value = checkLine(raw);
    if (!value.ok) throw new BackupFormatError(line, `${named('variable', key)} has no valid "values[${index}]": ${value.reason}`);
    values.push(value.text);
  }
  expectFields(line, record, { updated_at: isTimeMs }, 'variable', key);
  return { type: 'variable', name: record.name as string, description: description.text, values, updated_at: record.updated_at as number };
}

/**
 * checkEmoji holds an emoji record to what `PUT /api/v1/admin/emojis/<name>` accepts: the image is
 * checked by its content (type, size, dimensions declared in its header, before anything decodes it)
 * with the route's own function, and must be the type the record says and match its SHA-256.
 */
function checkEmoji(line: number, record: Fields): EmojiRecord {
  const key = keyOf(record.name, (v) => isString(v, 32) && EMOJI_NAME.test(v));
  expectFields(line, record, {
    name: (v) => isString(v, 32) && EMOJI_NAME.test(v),
    content_type: (v) => typeof v === 'string' && v in IMAGE_EXTENSIONS,
    image: (v) => isString(v, MAX_EMOJI_BASE64) && v.length > 0 && v.length % 4 === 0 && BASE64.test(v),
    sha256: (v) => isString(v, 64) && HEX64.test(v),
    updated_at: isTimeMs,
  }, 'emoji', key);
  const image = Buffer.from(record.image as string, 'base64');
  const checked = checkEmojiImage(image);
  if (!checked.ok) throw new BackupFormatError(line, `the image of ${named('emoji', key)} is ${checked.reason}`);
  if (checked.type !== record.content_type) throw new BackupFormatError(line, `the image of ${named('emoji', key)} is a ${checked.type} image, but its "content_type" says ${String(record.content_type)}`);
  if (createHash('sha256').update(image).digest('hex') !== record.sha256) {
    throw new BackupFormatError(line, `the image of ${named('emoji', key)} does not match its SHA-256 (is the file damaged?)`);
  }
  return record as unknown as EmojiRecord;
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
    created: (v) => isInteger(v) && v <= MAX_TIME_MS / 1000,
    engine: (v) => v === 'sqlite' || v === 'postgres',
    migrations: (v) => Array.isArray(v) && v.every((m) => isString(m, 200)),
    revision: (v) => isInteger(v) && v <= MAX_REVISION,
  }, 'header');
  return { ...(record as unknown as HeaderRecord), counts: countsOf(1, record.counts) };
}

/** isJsonObject tells whether a log record's details are the JSON text of an object, as the log API answers them. */
function isJsonObject(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value);
  } catch {
    return false;
  }
}

/**
 * parseRecord reads one line after the header: a data record, fully checked and with its texts as the
 * admin API would store them (trimmed), or the end record. Anything else is a BackupFormatError naming
 * the line, and the record by its kind and key.
 */
export function parseRecord(text: string, line: number): DataRecord | EndRecord {
  let record: Fields;
  try {
    record = JSON.parse(text) as Fields;
  } catch {
    throw new BackupFormatError(line, 'not valid JSON (is the file damaged?)');
  }
  if (record === null || typeof record !== 'object' || Array.isArray(record)) throw new BackupFormatError(line, 'not a record');
  const isUuid = (v: unknown): v is string => isString(v, 36) && parseUuid(v) === v;
  switch (record.type) {
    case 'variable':
      return checkVariable(line, record);
    case 'emoji':
      return checkEmoji(line, record);
    case 'entry': {
      const key = keyOf(record.uuid, isUuid);
      let trimmed = '';
      expectFields(line, record, {
        id: isRowId,
        uuid: isUuid,
        text: (v) => {
          if (typeof v !== 'string') return false;
          const checked = checkEntryText(v);
          if (!checked.ok) return checked.reason;
          trimmed = checked.text;
          return true;
        },
        state: (v) => v === 'visible' || v === 'hidden',
        created_at: (v) => isInteger(v) && v <= MAX_TIMESTAMP,
        updated_at: isTimeMs,
      }, 'entry', key);
      return { ...(record as unknown as EntryRecord), text: trimmed };
    }
    case 'report': {
      const key = keyOf(record.id, isUuid);
      let details: string | null = null;
      expectFields(line, record, {
        id: isUuid,
        entry_uuid: isUuid,
        reason: (v) => (REPORT_REASONS as readonly unknown[]).includes(v) || `it must be one of: ${REPORT_REASONS.join(', ')}; got ${shown(v)}`,
        details: (v) => {
          if (v === null) return true;
          if (typeof v !== 'string') return false;
          if ([...v].length > MAX_DETAILS_LENGTH) return `it has more than ${MAX_DETAILS_LENGTH} characters`;
          const checked = checkDetails(v);
          if (!checked.ok) return checked.reason;
          details = checked.text;
          return true;
        },
        status: (v) => v === 'open' || v === 'accepted' || v === 'dismissed',
        created_at: isTimeMs,
        resolved_at: orNull(isTimeMs),
        resolved_by: orNull(isLabel),
      }, 'report', key);
      return { ...(record as unknown as ReportRecord), details };
    }
    case 'token':
      expectFields(line, record, {
        id: isRowId,
        label: isLabel,
        hash: (v) => isString(v, 64) && HEX64.test(v),
        created_at: isTimeMs,
        revoked_at: orNull(isTimeMs),
      }, 'token', keyOf(record.label, isLabel));
      return record as unknown as TokenRecord;
    case 'log':
      expectFields(line, record, {
        id: isRowId,
        at: isTimeMs,
        actor: (v) => isString(v, 64) && v.length > 0,
        action: (v) => isString(v, 32) && v.length > 0,
        target: (v) => isString(v, 64) && v.length > 0,
        details: (v) => v === null || (isString(v, 100_000) && (isJsonObject(v) || 'it is not the JSON text of an object')),
      }, 'log record', keyOf(record.id, isRowId));
      return record as unknown as LogRecord;
    case 'end':
      return { type: 'end', counts: countsOf(line, record.counts) };
    default:
      throw new BackupFormatError(line, `unknown record type ${JSON.stringify(record.type)?.slice(0, 40) ?? 'none'}`);
  }
}
