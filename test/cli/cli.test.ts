import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { openDatabase } from '../../src/db/database.ts';
import { createStorage } from '../../src/storage/index.ts';
import pg from 'pg';
import { checkAnswersAgainstDocument, freePort, tempDir } from '../helper.ts';
import { BIN, parentEnv, runCommand, startService } from '../process-helper.ts';
import { skipWithout } from '../requirements.ts';

/** nonsense runs the command line and returns its exit code and output, never throwing. */
const run = promisify(execFile);

/** runWithout runs the command line with exactly `env` (not merged with this process's), in `cwd`. */
const runWithout = (args: string[], env: NodeJS.ProcessEnv, cwd: string) => run(process.execPath, [BIN, ...args], { cwd, env: { ...env, LOG_LEVEL: 'warn' } });

const nonsense = (args: string[], env: Record<string, string>, cwd?: string) => runCommand(args, env, cwd === undefined ? {} : { cwd });

describe('nonsense command line', () => {
  let dir: string;
  let env: Record<string, string>;
  beforeAll(() => {
    dir = tempDir();
    env = { DATABASE_URL: path.join(dir, 'cli.db') };
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('stops on a bad setting with a message naming it', async () => {
    const result = await nonsense(['serve'], { ...env, PORT: 'abc', RATE_LIMIT_READ: 'many' });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^nonsense: Invalid configuration:\n {2}- PORT must be an integer/m);
    expect(result.stderr).toMatch(/RATE_LIMIT_READ/);
  });

  it('prints its version, and names itself in every error', async () => {
    const { version } = JSON.parse(fs.readFileSync('package.json', 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) expect(await nonsense([flag], env)).toMatchObject({ code: 0, stdout: `${version}\n` });
    const unknown = await nonsense(['frobnicate'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^nonsense: unknown command 'frobnicate'$/m);
    expect((await nonsense(['export', '--bogus'], env)).stderr).toMatch(/^nonsense: unknown option '--bogus'$/m);
    expect((await nonsense(['import'], env)).stderr).toMatch(/^nonsense: missing required argument 'file'$/m);
  });

  it('migrates, then reports the schema up to date', async () => {
    expect((await nonsense(['migrate'], env)).stdout).toMatch(/Applied 10 migration\(s\): 0001-initial, 0002-search-index, 0003-moderation, 0004-long-text-keys, 0005-galaxy, 0006-changes, 0007-entry-counts, 0008-galaxy-answers, 0009-entry-counts-by-statement, 0010-entry-counts-by-time/);
    expect((await nonsense(['migrate'], env)).stdout).toMatch(/up to date/);
  });

  it('loads the demo data once', async () => {
    const first = await nonsense(['demo'], env);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/Demo data: \d{3} entries added \(0 already present\), 5 variables and 5 emojis added/);
    expect((await nonsense(['demo'], env)).stdout).toMatch(/Demo data: 0 entries added \(\d{3} already present\), 0 variables and 0 emojis/);
  });

  it('lays out the galaxy, then finds it up to date', async () => {
    const first = await nonsense(['galaxy'], env);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^Laid out \d{3} entries in [\d.]+ s\.$/m);
    expect((await nonsense(['galaxy'], env)).stdout).toMatch(/The galaxy is up to date/);
  });

  it('takes the layout threads from --threads, and refuses a count out of range', async () => {
    const refused = await nonsense(['galaxy', '--refit', '--threads', '17'], env);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/--threads must be "auto" or a number from 1 to 16, got "17"/);
    const laid = await nonsense(['galaxy', '--refit', '--threads', '2'], env);
    expect(laid.code).toBe(0);
    expect(laid.stdout).toMatch(/^Laid out \d{3} entries in [\d.]+ s\.$/m);
  });

  it('exports the same bytes as the HTTP export, and imports them elsewhere', async () => {
    const result = await nonsense(['export', '--format', 'csv', '--q', 'cat', '--after', '1600000000'], env);
    expect(result.code).toBe(0);
    const config = loadConfig({ DATABASE_URL: env.DATABASE_URL!, LOG_LEVEL: 'silent' });
    const database = await openDatabase(config.database);
    const app = await buildApp({ config, storage: createStorage(database), logger: false });
    await checkAnswersAgainstDocument(app);
    try {
      const http = (await app.inject('/api/v1/nonsense?format=csv&q=cat&after=1600000000')).body;
      // Lines with variables differ by their random values; everything else is byte for byte the same.
      const fixed = (csv: string) => csv.split('\r\n').filter((line) => !line.includes('$'));
      expect(fixed(result.stdout)).toEqual(fixed(http));
      expect(result.stdout.split('\r\n').length).toBe(http.split('\r\n').length);
      expect(http.split('\r\n').length).toBeGreaterThan(3);
      // The options are checked by the HTTP export's own schema, with the same words.
      const refused = (await app.inject('/api/v1/nonsense?after=1e3')).json().detail as string;
      expect((await nonsense(['export', '--after', '1e3'], env)).stderr).toContain(refused.replace('parameter "after"', 'option --after'));
    } finally {
      await app.close();
      await database.close();
    }
    const all = await nonsense(['export', '--format', 'json'], env);
    fs.writeFileSync(path.join(dir, 'all.json'), all.stdout);
    const other = { DATABASE_URL: path.join(dir, 'other.db') };
    expect((await nonsense(['import', path.join(dir, 'all.json')], other)).stdout).toMatch(/Imported .*all\.json: \d{3} added, 0 skipped/);
    fs.writeFileSync(path.join(dir, 'bad.csv'), 'nonsense\nfine\n"\u0007"\n');
    const bad = await nonsense(['import', path.join(dir, 'bad.csv')], other);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/line 3: .*control character.*Nothing was imported/);
    // The options are checked by the HTTP export's own schema, with the same words.
    expect((await nonsense(['export', '--format', 'xml'], env)).stderr).toMatch(/The option --format must be one of: csv, json, txt; got "xml"\./);
  }, 60_000);

  it('creates a token shown once on the last line, and revokes it', async () => {
    const created = await nonsense(['token', 'create', 'alice'], env);
    expect(created.code).toBe(0);
    const token = created.stdout.trim().split('\n').at(-1)!;
    expect(token).toMatch(/^nst_[A-Za-z0-9_-]{43}$/);
    const database = await openDatabase(loadConfig({ DATABASE_URL: env.DATABASE_URL! }).database);
    try {
      const tokens = createStorage(database).tokens;
      expect(await tokens.verify(token)).toBe('alice');
      expect((await nonsense(['token', 'create', 'alice'], env)).stderr).toMatch(/already has a token/);
      expect((await nonsense(['token', 'list'], env)).stdout).toMatch(/^alice\tcreated /);
      expect((await nonsense(['token', 'revoke', 'alice'], env)).stdout).toMatch(/Revoked/);
      expect(await tokens.verify(token)).toBeNull();
      expect((await nonsense(['token', 'revoke', 'alice'], env)).code).toBe(1);
      expect((await nonsense(['token', 'create', 'not a label'], env)).code).toBe(1);
    } finally {
      await database.close();
    }
  }, 60_000);

  it('serves a new database with demo data and stops cleanly on SIGTERM', async () => {
    fs.mkdirSync(path.join(dir, 'serve'));
    const service = await startService({ DATABASE_URL: path.join(dir, 'serve', 'fresh.db'), LOG_LEVEL: 'info', DEMO_DATA: 'auto', GALAXY: 'off' });
    try {
      const status = (await (await fetch(`${service.base}/api/v1/nonsense/status`)).json()) as { count: number };
      expect(status.count).toBeGreaterThanOrEqual(300);
      const random = (await (await fetch(`${service.base}/api/v1/nonsense/random`)).json()) as { nonsense: unknown };
      expect(typeof random.nonsense).toBe('string');
    } finally {
      expect((await service.stop()).code).toBe(0);
    }
    expect(service.output()).toContain('demo data loaded');
    expect(service.output()).toContain('shutting down');
  });
});

describe('messages people can act on', () => {
  let dir: string;
  beforeAll(() => {
    dir = tempDir();
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('stops on an explicit SQLite path in a missing folder, naming it, and creates nothing', async () => {
    const file = path.join(dir, 'no', 'such', 'folder', 'x.db');
    for (const command of [['serve'], ['migrate'], ['token', 'list']]) {
      const result = await nonsense(command, { DATABASE_URL: file, PORT: String(await freePort()) });
      expect(result.code, command.join(' ')).toBe(1);
      expect(result.stderr).toContain(`DATABASE_URL names the SQLite database ${file}, but its folder ${path.dirname(file)} does not exist`);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
    }
    expect(fs.existsSync(path.join(dir, 'no'))).toBe(false);
  });

  it('creates the default ./data folder by itself', async () => {
    const cwd = path.join(dir, 'default');
    fs.mkdirSync(cwd);
    const { DATABASE_URL: _inherited, ...withoutUrl } = parentEnv;
    const result = await runWithout(['migrate'], withoutUrl, cwd);
    expect(result.stdout).toMatch(/Applied 10 migration/);
    expect(fs.existsSync(path.join(cwd, 'data', 'nonsense.db'))).toBe(true);
  });

  it('says what is wrong with a file that is not a database', async () => {
    const file = path.join(dir, 'notes.db');
    fs.writeFileSync(file, 'These are my notes, not a database. '.repeat(200));
    const result = await nonsense(['migrate'], { DATABASE_URL: file });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`DATABASE_URL names the SQLite database ${file}, which cannot be opened: the file is not a SQLite database`);
  });

  it('names DATABASE_URL, the host and port and the cause when PostgreSQL cannot be reached, never the password', async () => {
    const unknown = await nonsense(['migrate'], { DATABASE_URL: 'postgres://svc:s3cret-pw@nohost.invalid:5544/nonsense' });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('Cannot connect to the PostgreSQL database of DATABASE_URL (nohost.invalid:5544, database "nonsense")');
    expect(unknown.stderr).toMatch(/the host name "nohost.invalid" is not known\. Check the host in DATABASE_URL\. Cause: getaddrinfo (ENOTFOUND|EAI_AGAIN) nohost.invalid/);

    const port = await freePort();
    const refused = await nonsense(['serve'], { DATABASE_URL: `postgres://svc:s3cret-pw@127.0.0.1:${port}/nonsense`, PORT: String(await freePort()) });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`(127.0.0.1:${port}, database "nonsense"): nothing accepts connections at 127.0.0.1:${port}. Is PostgreSQL running there, on this port?`);
    expect(refused.stderr).toContain(`Cause: connect ECONNREFUSED 127.0.0.1:${port}`);
    for (const result of [unknown, refused]) {
      expect(result.stderr).not.toContain('s3cret-pw');
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
    }
  });

  it('says when the PostgreSQL database does not exist', async () => {
    const server = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
    const client = new pg.Client({ connectionString: server, connectionTimeoutMillis: 2000 });
    const up = await client.connect().then(
      () => true,
      () => false,
    );
    await client.end().catch(() => {});
    if (skipWithout(`PostgreSQL at ${server}`, up, 'set TEST_POSTGRES_URL or start PostgreSQL')) return;
    const url = new URL(server);
    url.pathname = '/nonsense_no_such_database';
    const result = await nonsense(['migrate'], { DATABASE_URL: url.href });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('the database "nonsense_no_such_database" does not exist. Create it (createdb nonsense_no_such_database), then run `nonsense migrate`.');
  });

  it('token list says when there are none', async () => {
    const result = await nonsense(['token', 'list'], { DATABASE_URL: path.join(dir, 'tokens.db') });
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe('No active tokens. Create one with `nonsense token create <label>`.');
  });

  it('a missing, unreadable or folder import file gets one clear line', async () => {
    const env = { DATABASE_URL: path.join(dir, 'import.db') };
    const missing = path.join(dir, 'missing.csv');
    const result = await nonsense(['import', missing], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`nonsense: ${missing}: there is no such file. Nothing was imported.\n`);
    const folder = await nonsense(['import', dir], env);
    expect(folder.stderr).toBe(`nonsense: ${dir}: it is a folder, not a file. Nothing was imported.\n`);
    if (process.getuid?.() !== 0) {
      const locked = path.join(dir, 'locked.csv');
      fs.writeFileSync(locked, 'nonsense\nhello\n', { mode: 0o000 });
      expect((await nonsense(['import', locked], env)).stderr).toBe(`nonsense: ${locked}: this user may not read it (permission denied). Nothing was imported.\n`);
    }
  });

  it('lists the variables that imported texts use but the database does not define', async () => {
    const file = path.join(dir, 'variables.csv');
    fs.writeFileSync(file, 'nonsense\nA $ANIMAL$ ate ${snack}\nTwo $ANIMAL$s\nHello $AUTHOR$\nThree $ANIMAL$s and a $COLOUR$ one\n');
    const result = await nonsense(['import', file], { DATABASE_URL: path.join(dir, 'variables.db') });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/4 added, 0 skipped/);
    expect(result.stderr.split('\n').slice(0, 3)).toEqual([
      '3 entries use $ANIMAL$, which is not defined; they will be delivered literally.',
      '1 entry uses $COLOUR$, which is not defined; it will be delivered literally.',
      '1 entry uses ${snack}, which is not defined; it will be delivered literally.',
    ]);
    expect(result.stderr).not.toContain('$AUTHOR$');
  });
});

describe('files an operator gives: backup writes its own, import reads with bounds', () => {
  let dir: string;
  let env: Record<string, string>;
  beforeAll(() => {
    dir = tempDir();
    env = { DATABASE_URL: path.join(dir, 'files.db') };
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('backup writes a new file readable by its owner only, never through a link already at FILE.partial', async () => {
    const victim = path.join(dir, 'victim.txt');
    fs.writeFileSync(victim, 'Not to be overwritten.\n');
    const file = path.join(dir, 'backup.jsonl');
    fs.symlinkSync(victim, `${file}.partial`);
    const made = await nonsense(['backup', file], env);
    expect(made.code).toBe(0);
    expect(fs.readFileSync(victim, 'utf8')).toBe('Not to be overwritten.\n');
    expect(fs.lstatSync(`${file}.partial`).isSymbolicLink()).toBe(true);
    expect(fs.lstatSync(file).isFile()).toBe(true);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(file, 'utf8')).toMatch(/^\{"type":"header","format":"nonsense-backup"/);
    // The temporary file is gone; the link is left as it was.
    expect(fs.readdirSync(dir).filter((name) => name.startsWith('backup.jsonl'))).toEqual(['backup.jsonl', 'backup.jsonl.partial']);
  });

  it('backup replaces nothing at FILE without --force, a link that leads nowhere included; --force replaces the link, not what it names', async () => {
    const file = path.join(dir, 'link.jsonl');
    const named = path.join(dir, 'named-by-the-link.jsonl');
    fs.symlinkSync(named, file);
    const refused = await nonsense(['backup', file], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(`nonsense: ${file} exists already; choose another name, or pass --force to replace it. No backup was written.\n`);
    expect(fs.lstatSync(file).isSymbolicLink()).toBe(true);
    expect((await nonsense(['backup', '--force', file], env)).code).toBe(0);
    expect(fs.lstatSync(file).isFile()).toBe(true);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.existsSync(named)).toBe(false);
  });

  it('import of a file with a 600 MB line says which line, without reading it whole', async () => {
    const file = path.join(dir, 'one-long-line.txt');
    fs.writeFileSync(file, 'A fine first line.\n');
    // A sparse file: 600 MB of NUL bytes that take no disk space and no time to write.
    fs.truncateSync(file, 600 * 1024 * 1024);
    const result = await nonsense(['import', file], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`nonsense: ${file} line 2: the line is longer than 1,048,576 bytes; no line of an export is (is this the right file?). Nothing was imported.\n`);
  });

  it('import names the header line, line 1, when a CSV column is missing', async () => {
    const file = path.join(dir, 'columns.csv');
    fs.writeFileSync(file, 'uuid,text,timestamp\r\n,A text in the wrong column,1700000000\r\n');
    const result = await nonsense(['import', file], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`nonsense: ${file} line 1: the CSV has no "nonsense" column (the header names "uuid", "text", "timestamp"). Nothing was imported.\n`);
  });
});
