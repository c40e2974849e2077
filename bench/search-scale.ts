/**
 * The site's search page and an export with `q` at scale: the time to the first byte of each, for a
 * word in about 30 % of the entries, one in 1 % and one in 0.01 %, one request at a time and four at
 * once (each from its own address), and a rare word's search while another address runs four full
 * exports, and while four addresses each run an export with the 1 % word. Entries are generated in the database (texts of about 110 characters from a vocabulary,
 * timestamps over five years, 1 % hidden).
 *
 *   npm run bench:search
 *   SEARCH_ENTRIES=5000000 SEARCH_KEEP=1 npm run bench:search
 *   SEARCH_BASE=/path/to/other/checkout node --import tsx bench/search-scale.ts   # A/B, interleaved
 *   SEARCH_ENGINE=postgres node --import tsx bench/search-scale.ts                # TEST_POSTGRES_URL's server
 *
 * SEARCH_KEEP=1 keeps the generated SQLite file in the system's temporary folder and reuses it.
 * SEARCH_BASE names another checkout (built) to measure against, its runs interleaved with this one's.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { loadConfig } from '../src/config.ts';
import { migrate, openDatabase } from '../src/db/database.ts';
import { startService, waitForQuiet } from './lib.ts';

const ENTRIES = Number(process.env.SEARCH_ENTRIES ?? 1_000_000);
const ENGINE = process.env.SEARCH_ENGINE === 'postgres' ? 'postgres' : 'sqlite';
const ROUNDS = Number(process.env.SEARCH_ROUNDS ?? 2);
const BASE = process.env.SEARCH_BASE;
const SERVER = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** The words searched for; no word of the vocabulary contains one of them. */
export const WORDS = { common: 'marmalade', onePercent: 'quokka', rare: 'zeppelin' } as const;
const VOCABULARY = (
  'sock goose newt kettle ladder pillow cactus button walrus teapot lantern pebble gravy noodle ' +
  'spoon biscuit tuba wombat pickle carpet trumpet cabbage saddle mitten parrot blanket waffle ' +
  'banjo otter crumpet ferret gazebo hamster igloo jigsaw kazoo lobster muffin nugget onion ' +
  'pretzel radish sardine tortoise umbrella velvet whistle yodel'
).split(' ');
const WORDS_PER_TEXT = 14;
const FIVE_YEARS = 5 * 365 * 86_400;

/** The SQL of one generated text, from `i` (the entry's number) and random words and markers. */
function textSql(engine: 'sqlite' | 'postgres'): string {
  const padded = VOCABULARY.map((w) => w.padEnd(10)).join('');
  const pick =
    engine === 'sqlite'
      ? `rtrim(substr('${padded}', (abs(random()) % ${VOCABULARY.length}) * 10 + 1, 10))`
      : `rtrim(substr('${padded}', floor(random() * ${VOCABULARY.length})::int * 10 + 1, 10))`;
  const chance = (percent: number) => (engine === 'sqlite' ? `abs(random()) % 10000 < ${percent * 100}` : `random() < ${percent / 100}`);
  const words = Array.from({ length: WORDS_PER_TEXT }, () => pick).join(` || ' ' || `);
  return `'Entry ' || i || ': ' || ${words}
    || case when ${chance(30)} then ' ${WORDS.common}' else '' end
    || case when ${chance(1)} then ' ${WORDS.onePercent}' else '' end
    || case when ${chance(0.01)} then ' ${WORDS.rare}' else '' end`;
}

/** seed fills an empty database of `url` with ENTRIES generated entries. */
async function seed(url: string): Promise<void> {
  const started = Date.now();
  const database = await openDatabase(loadConfig({ DATABASE_URL: url }).database);
  await migrate(database);
  const db = database.db;
  const engine = database.quirks.engine;
  const step = FIVE_YEARS / ENTRIES;
  const batch = 100_000;
  for (let from = 1; from <= ENTRIES; from += batch) {
    const to = Math.min(ENTRIES, from + batch - 1);
    if (engine === 'postgres') {
      await sql`insert into entries (uuid, text, text_key, created_at, state, updated_at)
        select gen_random_uuid()::text, t, lower(t), 1500000000 + floor(i * ${step}::float8)::bigint + floor(random() * 3600)::bigint,
               case when random() < 0.01 then 'hidden' else 'visible' end, 0
        from (select i, ${sql.raw(textSql('postgres'))} as t from generate_series(${from}::int, ${to}::int) as i) as g`.execute(db);
    } else {
      await sql`with recursive n(i) as (select ${from} union all select i + 1 from n where i < ${to})
        insert into entries (uuid, text, text_key, created_at, state, updated_at)
        select lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-a' ||
               substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6))),
               t, lower(t), 1500000000 + cast(i * ${step} as integer) + abs(random()) % 3600,
               case when abs(random()) % 100 = 0 then 'hidden' else 'visible' end, 0
        from (select i, ${sql.raw(textSql('sqlite'))} as t from n)`.execute(db);
    }
    process.stdout.write(`\rseeded ${to} of ${ENTRIES}`);
  }
  await sql`update meta set value = value + 1 where key = 'revision'`.execute(db);
  await database.quirks.refreshStatistics(db);
  const counts = await sql<{ common: number; one: number; rare: number; hidden: number }>`select
      sum(case when text_key like ${`%${WORDS.common}%`} then 1 else 0 end) as common,
      sum(case when text_key like ${`%${WORDS.onePercent}%`} then 1 else 0 end) as one,
      sum(case when text_key like ${`%${WORDS.rare}%`} then 1 else 0 end) as rare,
      sum(case when state = 'hidden' then 1 else 0 end) as hidden from entries`.execute(db);
  await database.close();
  console.log(`\rseeded ${ENTRIES} entries in ${((Date.now() - started) / 1000).toFixed(0)} s:`, counts.rows[0]);
}

/**
 * firstByte requests `url` from the address `from` and says when its answer began, and when it ended
 * (ms); NaN for both when the service closed the connection first (REQUEST_TIMEOUT, 30 s).
 */
async function firstByte(url: string, from: string): Promise<{ first: number; total: number; status: number }> {
  const started = performance.now();
  const res = await fetch(url, { headers: { 'x-forwarded-for': from } }).catch(() => null);
  if (res === null) return { first: NaN, total: NaN, status: 0 };
  const reader = res.body!.getReader();
  const chunk = await reader.read();
  const first = performance.now() - started;
  try {
    if (!chunk.done) while (!(await reader.read()).done);
  } catch {
    return { first, total: NaN, status: res.status };
  }
  return { first, total: performance.now() - started, status: res.status };
}

const ms = (n: number) => (Number.isNaN(n) ? 'closed' : `${n.toFixed(0)}`);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** The figures of one service: a line per measurement, its first-byte times in ms. */
async function measure(base: string): Promise<Record<string, string>> {
  const row: Record<string, string> = {};
  const search = (word: string) => `${base}/search?q=${word}`;
  const exportQ = (word: string) => `${base}/api/v1/nonsense?format=csv&q=${word}`;
  let address = 0;
  const next = () => `10.0.${Math.floor(++address / 250)}.${(address % 250) + 1}`;
  for (const [name, word] of Object.entries(WORDS)) {
    const times: number[] = [];
    for (let i = 0; i < 3; i++) times.push((await firstByte(search(word), next())).first);
    row[`search ${name}`] = ms(median(times));
  }
  for (const [name, word] of Object.entries(WORDS)) {
    const { first, total } = await firstByte(exportQ(word), next());
    row[`export q ${name} (first / all)`] = `${ms(first)} / ${ms(total)}`;
  }
  for (const [name, word] of Object.entries(WORDS)) {
    const four = await Promise.all([0, 1, 2, 3].map(() => firstByte(search(word), next())));
    row[`4 × search ${name}`] = four.map((r) => ms(r.first)).join(', ');
  }
  const fourExports = await Promise.all([0, 1, 2, 3].map(() => firstByte(exportQ(WORDS.onePercent), next())));
  row['4 × export q 1 %'] = fourExports.map((r) => ms(r.first)).join(', ');
  // Another address keeps four full exports going; a rare word's search and a common one from others.
  const busy = next();
  const exports = Promise.all([0, 1, 2, 3].map(() => firstByte(`${base}/api/v1/nonsense?format=csv`, busy)));
  await new Promise((resolve) => setTimeout(resolve, 300));
  const beside = await Promise.all([firstByte(search(WORDS.rare), next()), firstByte(search(WORDS.common), next())]);
  row['search rare / common beside 4 full exports'] = beside.map((r) => ms(r.first)).join(' / ');
  await exports;
  // Four addresses each run an export with a word in 1 % of the entries; searches come from others.
  const qExports = Promise.all([0, 1, 2, 3].map(() => firstByte(exportQ(WORDS.onePercent), next())));
  await new Promise((resolve) => setTimeout(resolve, 300));
  const amid = await Promise.all([firstByte(search(WORDS.rare), next()), firstByte(search(WORDS.common), next())]);
  row['search rare / common beside 4 exports q 1 % (4 addresses)'] = amid.map((r) => ms(r.first)).join(' / ');
  await qExports;
  return row;
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nonsense-search-scale-'));
let url: string;
let dropDatabase: (() => Promise<void>) | undefined;
if (ENGINE === 'postgres') {
  const name = `nonsense_search_${Date.now()}`;
  const admin = new pg.Client({ connectionString: SERVER });
  await admin.connect();
  await admin.query(`create database ${name}`);
  url = Object.assign(new URL(SERVER), { pathname: `/${name}` }).href;
  dropDatabase = async () => {
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  };
  try {
    await seed(url);
  } catch (error) {
    await dropDatabase();
    throw error;
  }
} else {
  const keep = process.env.SEARCH_KEEP === '1';
  url = keep ? path.join(os.tmpdir(), `nonsense-search-${ENTRIES}.db`) : path.join(dir, 'search.db');
  if (!keep || !fs.existsSync(url)) {
    fs.rmSync(url, { force: true });
    await seed(url);
  }
}

const builds = [...(BASE ? [{ label: 'base', script: path.join(BASE, 'bin/nonsense.js') }] : []), { label: 'this', script: 'bin/nonsense.js' }];
const results: { label: string; row: Record<string, string> }[] = [];
try {
  let port = 18_460;
  for (let round = 0; round < ROUNDS; round++) {
    for (const build of builds) {
      const env = { DATABASE_URL: url, PORT: String(port++), LOG_LEVEL: 'warn', RATE_LIMIT_READ: 'off', TRUST_PROXY: 'true', GALAXY: 'off' };
      const service = await startService(env, '/readyz', undefined, build.script);
      await waitForQuiet(service.pid, 120_000);
      try {
        results.push({ label: `${build.label} #${round + 1}`, row: await measure(service.url) });
      } finally {
        await service.stop();
      }
      console.log(results.at(-1));
    }
  }
} finally {
  await dropDatabase?.();
  fs.rmSync(dir, { recursive: true, force: true });
}

console.log(`\n${ENTRIES} entries on ${ENGINE}, ${os.cpus().length} cores, first byte in ms (load average ${os.loadavg()[0]!.toFixed(1)})`);
const keys = Object.keys(results[0]!.row);
console.log(`| | ${results.map((r) => r.label).join(' | ')} |`);
console.log(`|---|${results.map(() => '---').join('|')}|`);
for (const key of keys) console.log(`| ${key} | ${results.map((r) => r.row[key]).join(' | ')} |`);
