import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { openDatabase } from '../../src/db/database.ts';
import { createStorage } from '../../src/storage/index.ts';
import { freePort, tempDir } from '../helper.ts';

const run = promisify(execFile);
const BIN = path.resolve('bin/nonsense.js');
// Vite sets BASE_URL for its own use; the service must not inherit it.
const { BASE_URL: _viteBase, ...parentEnv } = process.env;

/** nonsense runs the command line and returns its exit code and output, never throwing. */
async function nonsense(args: string[], env: Record<string, string>) {
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], { env: { ...parentEnv, LOG_LEVEL: 'warn', ...env } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

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
    expect(result.stderr).toMatch(/PORT must be an integer/);
    expect(result.stderr).toMatch(/RATE_LIMIT_READ/);
  });

  it('migrates, then reports the schema up to date', async () => {
    expect((await nonsense(['migrate'], env)).stdout).toMatch(/Applied 4 migration\(s\): 0001-initial, 0002-search-index, 0003-moderation, 0004-long-text-keys/);
    expect((await nonsense(['migrate'], env)).stdout).toMatch(/up to date/);
  });

  it('loads the demo data once', async () => {
    const first = await nonsense(['demo'], env);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/Demo data: \d{3} entries added \(0 already present\), 5 variables and 5 emojis added/);
    expect((await nonsense(['demo'], env)).stdout).toMatch(/Demo data: 0 entries added \(\d{3} already present\), 0 variables and 0 emojis/);
  });

  it('exports the same bytes as the HTTP export, and imports them elsewhere', async () => {
    const result = await nonsense(['export', '--format', 'csv', '--q', 'cat', '--after', '1600000000'], env);
    expect(result.code).toBe(0);
    const config = loadConfig({ DATABASE_URL: env.DATABASE_URL!, LOG_LEVEL: 'silent' });
    const database = await openDatabase(config.database);
    const app = await buildApp({ config, storage: createStorage(database), logger: false });
    try {
      const http = (await app.inject('/api/v1/nonsense?format=csv&q=cat&after=1600000000')).body;
      // Lines with variables differ by their random values; everything else is byte for byte the same.
      const fixed = (csv: string) => csv.split('\r\n').filter((line) => !line.includes('$'));
      expect(fixed(result.stdout)).toEqual(fixed(http));
      expect(result.stdout.split('\r\n').length).toBe(http.split('\r\n').length);
      expect(http.split('\r\n').length).toBeGreaterThan(3);
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
    expect((await nonsense(['export', '--format', 'xml'], env)).stderr).toMatch(/Allowed choices are csv, json, txt/);
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
    const port = await freePort();
    const child = spawn(process.execPath, [BIN, 'serve'], {
      env: { ...parentEnv, DATABASE_URL: path.join(dir, 'serve', 'fresh.db'), PORT: String(port), LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      let status: { count: number } | null = null;
      for (let i = 0; i < 100 && status === null; i++) {
        try {
          status = (await (await fetch(`http://127.0.0.1:${port}/api/v1/nonsense/status`)).json()) as { count: number };
        } catch {
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
      expect(status?.count).toBeGreaterThanOrEqual(300);
      const random = (await (await fetch(`http://127.0.0.1:${port}/api/v1/nonsense/random`)).json()) as { nonsense: unknown };
      expect(typeof random.nonsense).toBe('string');
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(output).toContain('demo data loaded');
    expect(output).toContain('shutting down');
  });
});
