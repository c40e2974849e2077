/**
 * The databases of `npm run bench:scale`: realistic generated entries (a mean of about 110
 * characters, 8 % with a line break, 10 % with a server variable, 5 % with non-ASCII letters, unique
 * texts, timestamps over five years), written straight into the tables (not one request or one
 * import row at a time) and kept for the next run: SQLite files in `.tmp/scale/`, PostgreSQL
 * databases named `nonsense_scale_<size>` on the server. Each entry is a function of its number, so
 * that a database made again, or the import sample (numbers past the database's), is the same.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { loadConfig } from '../src/config.ts';
import { migrate, openDatabase } from '../src/db/database.ts';
import { textKey } from '../src/domain/text.ts';
import { createStorage } from '../src/storage/index.ts';

export type ScaleEngine = 'sqlite' | 'postgres';

export const SCALE_DIR = path.resolve('.tmp/scale');
export const SCALE_SERVER = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** Five years of timestamps, ending at the start of 2026. */
export const LAST_TIMESTAMP = 1_767_225_600;
export const SPAN_SECONDS = 5 * 365 * 24 * 3600;
export const FIRST_TIMESTAMP = LAST_TIMESTAMP - SPAN_SECONDS;

/** The server variables the texts use. */
export const SCALE_VARIABLES = [
  { name: '$ANIMAL$', description: 'An animal.', values: ['goose', 'capybara', 'newt', 'heron', 'otter'] },
  { name: '$FOOD$', description: 'Something to eat.', values: ['soup', 'a pretzel', 'cold noodles', 'jam'] },
  { name: '$PLACE$', description: 'A place.', values: ['the station', 'a rooftop', 'the laundromat', 'the moon'] },
];

/** A word a few per cent of the texts contain, four more like it, and one in about ten thousand. */
export const COMMON_WORDS = ['umbrella', 'teapot', 'lighthouse', 'bicycle'];
export const COMMON_WORD = COMMON_WORDS[0]!;
export const RARE_WORD = 'quokkaesque';

const SUBJECTS = ['The', 'A', 'My', 'Our', 'Every', 'That', 'One', 'Your', 'Some', 'No'];
const ADJECTIVES = [
  'purple', 'sleepy', 'furious', 'tiny', 'enormous', 'polite', 'suspicious', 'wobbly', 'ancient', 'glittering', 'damp', 'loud',
  'invisible', 'reluctant', 'cheerful', 'haunted', 'sticky', 'lonely', 'electric', 'velvet', 'crooked', 'frozen', 'brave', 'rusty',
  'curious', 'gentle', 'hollow', 'noisy', 'secret', 'silver', 'spicy', 'tired',
];
const NOUNS = [
  'sock', 'toaster', 'cloud', 'spoon', 'penguin', 'accountant', 'kettle', 'cactus', 'wizard', 'pigeon', 'sandwich', 'violin', 'dentist',
  'mailbox', 'pillow', 'tractor', 'ghost', 'librarian', 'pancake', 'robot', 'turnip', 'giraffe', 'bucket', 'mirror', 'carpet', 'drum',
  'lantern', 'walrus', 'noodle', 'compass', 'ladder', 'hamster', ...COMMON_WORDS,
];
const VERBS = [
  'sang to', 'argued with', 'borrowed', 'painted', 'ignored', 'married', 'swallowed', 'followed', 'interviewed', 'sold', 'hid behind',
  'apologised to', 'outran', 'befriended', 'forgot about', 'wrote a poem for', 'negotiated with', 'tickled', 'photographed', 'envied',
];
const ENDINGS = [
  'on a Tuesday', 'without asking', 'in the rain', 'for no reason at all', 'twice', 'at midnight', 'before breakfast', 'and regretted nothing',
  'while humming', 'in complete silence', 'with great dignity', 'for the third time this week',
];
const ACCENTED = ['café', 'naïve', 'Straße', 'smörgåsbord', 'jalapeño', 'Ærøskøbing', 'crème brûlée', 'Zürich', 'señor', '東京', 'Ωmega', 'déjà vu'];
/** Two letters each, so that a name reads back as one number only. */
const SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'ru', 'ta', 'vi', 'zo', 'be', 'da', 'fu', 'go', 'hi', 'ja', 'ku', 'ly', 'ma', 'no', 'pe', 'qi', 'ra', 'sa', 'te', 'ul', 'vo', 'wa', 'xe', 'yo', 'zu', 'ce', 'di', 'so'];

/** A generator of numbers in [0, 1) for one entry, the same for the same number. */
function randomOf(n: number): () => number {
  let state = (Math.imul(n ^ 0x9e3779b9, 0x85ebca6b) ^ (n >>> 13)) >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A made-up name that only entry `n` has: its number in syllables, so every text is unique. */
function nameOf(n: number): string {
  let word = '';
  let rest = n;
  do {
    word += SYLLABLES[rest % SYLLABLES.length];
    rest = Math.floor(rest / SYLLABLES.length);
  } while (rest > 0);
  return word[0]!.toUpperCase() + word.slice(1);
}

/** The text of entry number `n`. */
export function scaleText(n: number): string {
  const random = randomOf(n);
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!;
  const noun = () => (random() < 0.047 ? pick(SCALE_VARIABLES).name : pick(NOUNS));
  const clause = () => `${pick(SUBJECTS)} ${pick(ADJECTIVES)} ${noun()} ${pick(VERBS)} the ${pick(ADJECTIVES)} ${noun()} ${pick(ENDINGS)}`;
  let text = `${clause()}, said ${nameOf(n)}`;
  if (random() < 0.38) text += `, and ${clause().toLowerCase()}`;
  if (random() < 0.05) text += ` near the ${pick(ACCENTED)}`;
  if (n % 10_007 === 17) text += ` in a ${RARE_WORD} mood`;
  text += '.';
  if (random() < 0.08) text += `\n${clause()}.`;
  return text;
}

/** The timestamp of entry `n` of `size`: spread evenly over the five years, oldest first. */
export function scaleTimestamp(n: number, size: number): number {
  return FIRST_TIMESTAMP + Math.floor((n * SPAN_SECONDS) / size);
}

/** What a run needs of a database besides its entries. */
export interface ScaleDatabase {
  engine: ScaleEngine;
  size: number;
  /** The DATABASE_URL: a file, or a postgres:// URL. */
  url: string;
  /** Up to 1,000 UUIDs spread over the entries. */
  sample: string[];
  /** An admin token. */
  token: string;
}

const ROWS_PER_TRANSACTION = 50_000;

/** scaleDatabase makes the database of `size` entries for `engine`, or reuses the one kept from an earlier run. */
export async function scaleDatabase(engine: ScaleEngine, size: number, log: (line: string) => void): Promise<ScaleDatabase & { seconds: number | null }> {
  fs.mkdirSync(SCALE_DIR, { recursive: true });
  const infoFile = path.join(SCALE_DIR, `${engine}-${size}.json`);
  const url = engine === 'sqlite' ? path.join(SCALE_DIR, `sqlite-${size}.db`) : Object.assign(new URL(SCALE_SERVER), { pathname: `/nonsense_scale_${size}` }).href;
  if (fs.existsSync(infoFile) && (engine === 'postgres' || fs.existsSync(url))) {
    // Migrated here, so that a migration's one-time work is not taken for the service's start.
    const kept = await openDatabase(loadConfig({ DATABASE_URL: url }).database);
    try {
      const applied = await migrate(kept);
      if (applied.length > 0) log(`  migrated the kept database: ${applied.join(', ')}`);
    } finally {
      await kept.close();
    }
    return { ...(JSON.parse(fs.readFileSync(infoFile, 'utf8')) as ScaleDatabase), seconds: null };
  }
  const started = performance.now();
  if (engine === 'sqlite') fs.rmSync(url, { force: true });
  else await recreatePostgres(size);
  const database = await openDatabase(loadConfig({ DATABASE_URL: url }).database);
  await migrate(database);
  const storage = createStorage(database);
  await storage.variables.insertMissing(SCALE_VARIABLES);
  const token = await storage.tokens.create('scale bench');
  if (token === null) throw new Error('the admin token could not be made');
  await database.close();
  const every = Math.max(1, Math.floor(size / 1000));
  const sample: string[] = [];
  const rows = function* () {
    for (let n = 0; n < size; n++) {
      const uuid = randomUUID();
      if (n % every === 0) sample.push(uuid);
      const text = scaleText(n);
      yield { uuid, text, key: textKey(text), timestamp: scaleTimestamp(n, size) };
    }
  };
  if (engine === 'sqlite') writeSqlite(url, rows(), size, log);
  else await writePostgres(url, rows(), size, log);
  const info: ScaleDatabase = { engine, size, url, sample, token };
  fs.writeFileSync(infoFile, JSON.stringify(info));
  return { ...info, seconds: (performance.now() - started) / 1000 };
}

type Row = { uuid: string; text: string; key: string; timestamp: number };

/**
 * The entries go in as a restore writes them: the revision moves once and the change log starts
 * after it (changes_floor), since no log of how they were added is kept.
 */
function writeSqlite(file: string, rows: Iterable<Row>, size: number, log: (line: string) => void): void {
  const raw = new SQLite(file);
  raw.pragma('journal_mode = WAL');
  raw.pragma('synchronous = OFF');
  raw.pragma('cache_size = -262144');
  // The search index is built once at the end ('rebuild'), not row by row through its triggers:
  // indexing each row as it comes is most of the time of a large generation.
  const searchTriggers = raw.prepare(`select name, sql from sqlite_master where type = 'trigger' and tbl_name = 'entries' and name like 'entries_search%'`).all() as { name: string; sql: string }[];
  for (const trigger of searchTriggers) raw.exec(`drop trigger ${trigger.name}`);
  const insert = raw.prepare(`insert into entries (uuid, text, text_key, created_at, state, updated_at) values (?, ?, ?, ?, 'visible', 0)`);
  let written = 0;
  let batch: Row[] = [];
  const flush = raw.transaction((list: Row[]) => {
    for (const row of list) insert.run(row.uuid, row.text, row.key, row.timestamp);
  });
  for (const row of rows) {
    batch.push(row);
    if (batch.length === ROWS_PER_TRANSACTION) {
      flush(batch);
      written += batch.length;
      batch = [];
      if (written % 500_000 === 0) log(`  ${written.toLocaleString('en')} of ${size.toLocaleString('en')} written`);
    }
  }
  flush(batch);
  for (const trigger of searchTriggers) raw.exec(trigger.sql);
  log('  building the search index');
  raw.exec(`insert into entries_search (entries_search) values ('rebuild')`);
  raw.exec(`update meta set value = value + 1 where key = 'revision'; update meta set value = (select value from meta where key = 'revision') where key = 'changes_floor'`);
  raw.pragma('wal_checkpoint(TRUNCATE)');
  raw.close();
}

async function recreatePostgres(size: number): Promise<void> {
  const admin = new pg.Client({ connectionString: SCALE_SERVER });
  await admin.connect();
  try {
    await admin.query(`drop database if exists nonsense_scale_${size} with (force)`);
    await admin.query(`create database nonsense_scale_${size}`);
  } finally {
    await admin.end();
  }
}

async function writePostgres(url: string, rows: Iterable<Row>, size: number, log: (line: string) => void): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    let written = 0;
    let batch: Row[] = [];
    const flush = async () => {
      await client.query(
        `insert into entries (uuid, text, text_key, created_at, state, updated_at)
         select u, t, k, c, 'visible', 0 from unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) as x(u, t, k, c)`,
        [batch.map((r) => r.uuid), batch.map((r) => r.text), batch.map((r) => r.key), batch.map((r) => r.timestamp)],
      );
      written += batch.length;
      batch = [];
      if (written % 500_000 === 0) log(`  ${written.toLocaleString('en')} of ${size.toLocaleString('en')} written`);
    };
    for (const row of rows) {
      batch.push(row);
      if (batch.length === 10_000) await flush();
    }
    if (batch.length > 0) await flush();
    await client.query(`update meta set value = value + 1 where key = 'revision'`);
    await client.query(`update meta set value = (select value from meta where key = 'revision') where key = 'changes_floor'`);
    await client.query('vacuum analyze');
  } finally {
    await client.end();
  }
}

/** importSample writes a CSV export of `count` entries that no scale database holds, for timing the import. */
export function importSample(count: number): string {
  const file = path.join(SCALE_DIR, `import-${count}.csv`);
  if (fs.existsSync(file)) return file;
  const lines = ['uuid,nonsense,original_nonsense,timestamp'];
  // Numbers past the largest database, so that none of these texts exists there.
  const first = 100_000_000;
  const quote = (text: string) => (/[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text);
  for (let n = first; n < first + count; n++) lines.push(`${randomUUID()},${quote(scaleText(n))},,${scaleTimestamp(n - first, count)}`);
  fs.writeFileSync(`${file}.part`, `${lines.join('\r\n')}\r\n`);
  fs.renameSync(`${file}.part`, file);
  return file;
}
