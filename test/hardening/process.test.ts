/**
 * The service as a real process on the embedded engine: secrets stay out of the logs, SIGTERM lets
 * an in-flight export finish and closes the database cleanly, and SIGKILL in the middle of an import
 * (whole batches of it kept, none in part) or of a burst of admin writes leaves an intact database
 * that holds every acknowledged write.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { migrate, openDatabase } from '../../src/db/database.ts';
import { IMPORT_BATCH } from '../../src/import/import-file.ts';
import { createStorage, type Storage } from '../../src/storage/index.ts';
import { freePort, tempDir } from '../helper.ts';
import { BIN, parentEnv, startService, type RunningService } from '../process-helper.ts';
import { until } from '../wait.ts';


/** serve starts `nonsense serve` with info logs (some tests read them) and resolves once it answers /healthz. */
function serve(env: Record<string, string>): Promise<RunningService> {
  // The galaxy's layout thread is left out: these tests are about requests, shutdown and crashes.
  return startService({ LOG_LEVEL: 'info', GALAXY: 'off', ...env }, { readyPath: '/healthz' });
}

/** openStorage opens (and migrates) a database file in this process. */
async function openStorage(file: string): Promise<{ storage: Storage; close: () => Promise<void> }> {
  const database = await openDatabase(loadConfig({ DATABASE_URL: file }).database);
  await migrate(database);
  return { storage: createStorage(database), close: () => database.close() };
}

async function seed(file: string, count: number): Promise<string> {
  const { storage, close } = await openStorage(file);
  const rows = Array.from({ length: count }, (_, i) => ({
    uuid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    text: `Seeded entry number ${i}, long enough to look like real nonsense.`,
    timestamp: 1_600_000_000 + i,
  }));
  await storage.entries.insertEntries(rows);
  const token = (await storage.tokens.create('ops'))!;
  await close();
  return token;
}

function integrity(file: string): { check: string; texts: Set<string>; count: number } {
  const db = new Database(file, { readonly: true });
  try {
    const check = (db.pragma('integrity_check') as { integrity_check: string }[]).map((row) => row.integrity_check).join('; ');
    const texts = new Set((db.prepare('select text from entries').all() as { text: string }[]).map((row) => row.text));
    return { check, texts, count: texts.size };
  } finally {
    db.close();
  }
}

// Each test starts real processes; on a loaded machine that takes far longer than an injected request.
describe('a real server process', { timeout: 60_000 }, () => {
  let dir: string;
  beforeAll(() => {
    dir = tempDir();
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('warns at start when it listens beyond loopback without BASE_URL, and only then', async () => {
    const file = path.join(dir, 'base-url.db');
    await seed(file, 1);
    for (const [env, warned] of [
      [{ HOST: '0.0.0.0' }, true],
      [{ HOST: '0.0.0.0', BASE_URL: 'https://nonsense.example.org' }, false],
      [{}, false],
    ] as const) {
      const server = await serve({ DATABASE_URL: file, ...env });
      server.child.kill('SIGTERM');
      await server.exited;
      expect(server.output().includes('without BASE_URL'), JSON.stringify(env)).toBe(warned);
    }
  });

  it('never logs tokens, the Authorization header or passwords in URLs', async () => {
    const file = path.join(dir, 'secrets.db');
    const token = await seed(file, 3);
    const redisPort = await freePort();
    const server = await serve({
      DATABASE_URL: file,
      LOG_LEVEL: 'debug',
      REDIS_URL: `redis://:redis-hunter2@127.0.0.1:${redisPort}`,
      METRICS_TOKEN: 'metrics-hunter2-0123456789',
    });
    const admin = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    expect((await fetch(`${server.base}/api/v1/admin/nonsense`, { method: 'POST', headers: admin, body: JSON.stringify({ text: 'Logged write' }) })).status).toBe(201);
    expect((await fetch(`${server.base}/api/v1/admin/reports`, { headers: { authorization: 'Bearer wrong-hunter2-token' } })).status).toBe(401);
    const scraped = await fetch(`${server.base}/metrics`, { headers: { authorization: 'Bearer metrics-hunter2-0123456789' } });
    expect(scraped.status).toBe(200);
    // The served process times its queries (the server hands its observer to the database).
    expect(await scraped.text()).toMatch(/^nonsense_db_query_duration_seconds_count\{outcome="ok"\} [1-9]/m);
    expect((await fetch(`${server.base}/metrics`, { headers: { authorization: 'Bearer bad-hunter2-guess-0000' } })).status).toBe(401);
    server.child.kill('SIGTERM');
    await server.exited;

    // A database that cannot be reached: the failure is reported without the password.
    const closed = await freePort();
    const failing = spawn(process.execPath, [BIN, 'serve'], {
      env: { ...parentEnv, DATABASE_URL: `postgres://svc:pg-hunter2@127.0.0.1:${closed}/nonsense`, PORT: String(await freePort()) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let failed = '';
    failing.stdout.on('data', (chunk) => (failed += chunk));
    failing.stderr.on('data', (chunk) => (failed += chunk));
    const code = await new Promise((resolve) => failing.once('exit', resolve));

    const logs = server.output();
    expect(logs).toMatch(/"msg":"request"/);
    expect(logs).toMatch(/"REDIS_URL":"redis:\/\/:\*\*\*@/);
    expect(logs).toMatch(/"METRICS_TOKEN":"\*\*\*"/);
    expect(code).not.toBe(0);
    expect(failed).toMatch(/ECONNREFUSED|connect/);
    for (const secret of [token, 'hunter2']) {
      expect(logs).not.toContain(secret);
      expect(failed).not.toContain(secret);
    }
  });

  it('finishes an in-flight export on SIGTERM, refuses new connections, then closes the database cleanly', async () => {
    const file = path.join(dir, 'shutdown.db');
    const count = 20_000;
    await seed(file, count);
    const server = await serve({ DATABASE_URL: file });
    // A slow client: it reads the first chunk, then stops reading while the server is told to stop,
    // and reads on only once the server refuses new connections.
    let finish!: () => Promise<string>;
    const signalled = new Promise<void>((terminated, reject) => {
      http.get(`${server.base}/api/v1/nonsense?format=csv`, (res) => {
        let text = '';
        res.setEncoding('utf8');
        const ended = new Promise<string>((resolve, failed) => {
          res.on('end', () => resolve(text));
          res.on('error', failed);
        });
        res.once('data', (first: string) => {
          text += first;
          res.pause();
          server.child.kill('SIGTERM');
          finish = () => {
            res.on('data', (chunk: string) => (text += chunk));
            res.resume();
            return ended;
          };
          terminated();
        });
      }).on('error', reject);
    });
    // Shutting down: no new connections are accepted (on a loaded machine the signal takes a moment).
    await signalled;
    await expect
      .poll(() => fetch(`${server.base}/healthz`).then(() => 'accepted', () => 'refused'), { timeout: 5000, interval: 100 })
      .toBe('refused');
    const csv = await finish();
    expect(csv.split('\r\n').filter(Boolean)).toHaveLength(count + 1);
    expect(csv.endsWith(`,${1_600_000_000 + count - 1}\r\n`)).toBe(true);
    expect(await server.exited, server.output()).toEqual({ code: 0, signal: null });
    expect(server.output()).toMatch(/shutting down/);
    // A clean close checkpoints the write-ahead log into the database file and removes it.
    expect(fs.existsSync(`${file}-wal`)).toBe(false);
    expect(integrity(file)).toMatchObject({ check: 'ok', count });
  });

  it('survives SIGKILL during an import: intact, and nothing of the import half-written', async () => {
    const file = path.join(dir, 'import.db');
    await seed(file, 10);
    const csv = path.join(dir, 'big.csv');
    const rows = ['uuid,nonsense,original_nonsense,timestamp'];
    for (let i = 0; i < 80_000; i++) rows.push(`,Imported line ${i} about a kettle that learned to whistle jazz,,${1_650_000_000 + i}`);
    fs.writeFileSync(csv, `${rows.join('\r\n')}\r\n`);
    const importer = spawn(process.execPath, [BIN, 'import', csv], { env: { ...parentEnv, DATABASE_URL: file }, stdio: 'ignore' });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => importer.once('exit', (_code, signal) => resolve(signal)));
    // Mid-way: once the import's batches have started to fill the write-ahead log.
    await until(
      'the import to fill 2 MiB of the write-ahead log',
      () => {
        if (importer.exitCode !== null) throw new Error(`the import ended (${importer.exitCode}) before it was cut off`);
        return (fs.statSync(`${file}-wal`, { throwIfNoEntry: false })?.size ?? 0) > 2 * 1024 * 1024;
      },
      { timeoutMs: 12_000 },
    );
    importer.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    const after = integrity(file);
    expect(after.check).toBe('ok');
    // Whole batches only (import/import-file.ts), and not all of them.
    expect((after.count - 10) % IMPORT_BATCH).toBe(0);
    expect(after.count).toBeLessThan(10 + 80_000);
  });

  it('survives SIGKILL during a burst of admin writes with every acknowledged write kept', async () => {
    const file = path.join(dir, 'burst.db');
    const token = await seed(file, 10);
    const server = await serve({ DATABASE_URL: file, LOG_LEVEL: 'warn' });
    const acknowledged: string[] = [];
    let stop = false;
    let n = 0;
    const writer = async () => {
      while (!stop) {
        const text = `Burst write ${n++} ${Math.random().toString(36).slice(2)}`;
        try {
          const res = await fetch(`${server.base}/api/v1/admin/nonsense`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: JSON.stringify({ text }),
          });
          if (res.status === 201) acknowledged.push(text);
        } catch {
          return; // the server is gone
        }
      }
    };
    const writers = Array.from({ length: 16 }, writer);
    // Cut off mid-burst, once enough writes are acknowledged for the check to mean something.
    await until('50 acknowledged writes', () => acknowledged.length >= 50, { timeoutMs: 20_000 });
    server.child.kill('SIGKILL');
    stop = true;
    await Promise.all(writers);
    expect(await server.exited).toEqual({ code: null, signal: 'SIGKILL' });
    const after = integrity(file);
    expect(after.check).toBe('ok');
    const missing = acknowledged.filter((text) => !after.texts.has(text));
    expect(missing).toEqual([]);
  });
});
