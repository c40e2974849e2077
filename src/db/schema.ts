/**
 * The database schema as Kysely sees it. Both engines store the same tables; engine differences live in
 * `dialects/<engine>.ts`.
 */
import type { Generated } from 'kysely';

export type EntryState = 'visible' | 'hidden';

export interface EntryTable {
  /** Surrogate key: dense enough for cheap random picks and stable paging. */
  id: Generated<number>;
  uuid: string;
  /** Raw text, trimmed, with its variables unreplaced. */
  text: string;
  /** Duplicate-detection key: the text trimmed, NFC-normalised and lower-cased. */
  text_key: string;
  /** Unix seconds when the entry was added (the API's `timestamp`). */
  created_at: number;
  state: EntryState;
  /** Unix milliseconds of the last change. */
  updated_at: number;
}

export interface VariableTable {
  /** The token as written in texts, e.g. `$ANIMAL$` or `${animal}`. */
  name: string;
  description: string;
  /** JSON array of strings (non-empty). */
  values_json: string;
  updated_at: number;
}

export interface EmojiTable {
  /** The name between colons, e.g. `blobcat` for `:blobcat:`. */
  name: string;
  content_type: string;
  image: Uint8Array;
  /** Hex SHA-256 of the image bytes; used as the image's ETag. */
  sha256: string;
  updated_at: number;
}

export interface MetaTable {
  key: string;
  value: number;
}

export type ReportStatus = 'open' | 'accepted' | 'dismissed';

export interface ReportTable {
  id: string;
  entry_uuid: string;
  reason: string;
  details: string | null;
  status: ReportStatus;
  /** Unix milliseconds. */
  created_at: number;
  resolved_at: number | null;
  /** Label of the token that accepted or dismissed it. */
  resolved_by: string | null;
}

export interface TokenTable {
  id: Generated<number>;
  label: string;
  /** Hex SHA-256 of the token; the token itself is never stored. */
  hash: string;
  created_at: number;
  revoked_at: number | null;
}

export interface ModerationLogTable {
  id: Generated<number>;
  /** Unix milliseconds. */
  at: number;
  /** Label of the token that acted. */
  actor: string;
  action: string;
  /** The entry uuid, variable name, emoji name or report id acted on. */
  target: string;
  /** JSON object with what changed, or null. */
  details: string | null;
}

/** The current galaxy layout: one row (id 1), written only by the layout computation. */
export interface GalaxyLayoutTable {
  id: number;
  /** Numbers the fits: every full refit takes the next one, and its points carry it. */
  fit: number;
  /** Grows with every change of the stored points (fit or placement): the layout's revision. */
  version: number;
  /** The revision of the entries (meta `revision`) the layout reflects. */
  revision: number;
  /** Entries the fit laid out. */
  fitted_count: number;
  /** Entries placed by transform since the fit (new or edited); decides the next refit. */
  placed_since_fit: number;
  /** Version of the algorithm that made `model`; another version is refitted. */
  model_version: number;
  /** What places new entries into this layout (services/galaxy/layout.ts, gzip). */
  model: Uint8Array;
  /** Unix milliseconds of the fit and of the last change. */
  fitted_at: number;
  updated_at: number;
}

/** A star: an entry's place in the galaxy of one fit. */
export interface GalaxyPointTable {
  fit: number;
  entry_id: number;
  /** The entry's `updated_at` when it was placed: a different one means it changed since. */
  entry_updated_at: number;
  x: number;
  y: number;
  z: number;
  point_size: number;
}

/** A stored answer of the galaxy endpoint for a fit (services/galaxy/answer.ts). */
export interface GalaxyAnswerTable {
  id: number;
  fit: number;
  /** The entries revision it reflects: changes after it are applied when it is served. */
  revision: number;
  stars: number;
  chunks: number;
  /** 1 once every chunk is written; only complete answers are served. */
  complete: number;
  /** Unix milliseconds. */
  created_at: number;
}

/** A chunk of a stored answer: consecutive stars (in uuid order) rendered in one format. */
export interface GalaxyAnswerChunkTable {
  answer: number;
  format: string;
  seq: number;
  first_uuid: string;
  last_uuid: string;
  stars: number;
  bytes: Uint8Array;
}

/** One change to what the public sees, at its own revision (src/storage/changes.ts). */
export interface ChangeTable {
  revision: number;
  /** `entry.created`, `entry.updated`, `entry.hidden`, `entry.restored`, `entry.deleted`, `variable.updated`, `variable.deleted`, `emoji.updated`, `emoji.deleted`. */
  type: string;
  /** Unix seconds. */
  at: number;
  /** The entry's uuid, or the variable's or emoji's name. */
  key: string;
  /** For created, updated and restored entries: the entry's JSON as by-UUID answered it then; else null. */
  entry: string | null;
}

/** Visible entries per block of 4,096 ids, kept by triggers (migration 0007). */
export interface EntryCountTable {
  /** id / 4096. */
  block: number;
  visible: number;
}

export interface EntryTimeCountTable {
  /** created_at >> 16: a span of 65,536 seconds. */
  span: number;
  visible: number;
}

export interface DB {
  changes: ChangeTable;
  entries: EntryTable;
  entry_counts: EntryCountTable;
  entry_time_counts: EntryTimeCountTable;
  variables: VariableTable;
  emojis: EmojiTable;
  meta: MetaTable;
  reports: ReportTable;
  tokens: TokenTable;
  moderation_log: ModerationLogTable;
  galaxy_layout: GalaxyLayoutTable;
  galaxy_points: GalaxyPointTable;
  galaxy_answers: GalaxyAnswerTable;
  galaxy_answer_chunks: GalaxyAnswerChunkTable;
}
