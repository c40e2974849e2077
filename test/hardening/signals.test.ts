/**
 * The service under a process manager, as real processes: SIGTERM or SIGINT to the process the
 * manager started (`npm start`, or `bin/nonsense.js` itself) drains and exits, leaving no process
 * behind and the port free for the next one, also when the signal comes twice (Ctrl-C reaches npm
 * and node at once, and npm passes its own on). And what it writes: on a terminal a readable line an
 * event, the address first; otherwise JSON lines, the address first too.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { migrate, openDatabase } from '../../src/db/database.ts';
import { createStorage } from '../../src/storage/index.ts';
import { freePort, tempDir } from '../helper.ts';
import { BIN, parentEnv } from '../process-helper.ts';
import { skipWithout } from '../requirements.ts';
import { until } from '../wait.ts';

/** The server's own limit for in-flight requests after a signal (SHUTDOWN_GRACE_MS), and a margin. */
const GRACE_MS = 10_000 + 5_000;
const ROOT = path.resolve('.');
const SCRIPT = '/usr/bin/script';

/** parentOf reads a process's parent from /proc; null once it is gone or a zombie (ended, not yet reaped). */
function parentOf(pid: number): number | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return state === 'Z' ? null : Number(ppid);
  } catch {
    return null;
  }
}

/** descendants lists the live processes below `pid`. */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const parent = parentOf(Number(name));
    if (parent !== null) children.set(parent, [...(children.get(parent) ?? []), Number(name)]);
  }
  const found: number[] = [];
  const walk = (p: number) => {
    for (const child of children.get(p) ?? []) {
      found.push(child);
      walk(child);
    }
  };
  walk(pid);
  return found;
}

/** portFree tells whether a new server could listen on the port now. */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

interface Started {
  child: ChildProcess;
  port: number;
  base: string;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The node process serving (the child itself, or below it). */
  server: number;
}

/**
 * start runs `command` in its own process group with a free PORT and resolves once /healthz answers,
 * with the pid of the node process that listens.
 */
async function start(command: string, args: string[], env: Record<string, string>): Promise<Started> {
  const port = await freePort();
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { ...parentEnv, LOG_LEVEL: 'info', DEMO_DATA: 'off', GALAXY: 'off', RATE_LIMIT_READ: 'off', PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const base = `http://127.0.0.1:${port}`;
  await until(
    () => `${command} to be ready:\n${output}`,
    async () => {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${command} exited before it was ready:\n${output}`);
      return fetch(`${base}/healthz`, { signal: AbortSignal.timeout(2000) }).then((res) => res.ok, () => false);
    },
    { timeoutMs: 30_000, intervalMs: 50 },
  );
  const servers = [child.pid!, ...descendants(child.pid!)].filter((pid) => {
    try {
      return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('nonsense.js\0serve');
    } catch {
      return false;
    }
  });
  expect(servers, output).toHaveLength(1);
  return { child, port, base, output: () => output, exited, server: servers[0]! };
}

/** stopped waits (up to `withinMs`) for the started process to exit and checks that nothing of it is left. */
async function stopped(started: Started, withinMs = GRACE_MS): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), withinMs).unref());
  const result = await Promise.race([started.exited, timeout]);
  const left = [started.server, ...descendants(started.child.pid!)].filter((pid) => parentOf(pid) !== null);
  if (left.length > 0) for (const pid of left) process.kill(pid, 'SIGKILL');
  expect(result, started.output()).not.toBe('timeout');
  expect(left, `processes left running:\n${started.output()}`).toEqual([]);
  expect(await portFree(started.port)).toBe(true);
  return result as { code: number | null; signal: NodeJS.Signals | null };
}

/**
 * download starts an export and reads only its first chunk, so that the server has a request in
 * flight while it is told to stop; `finish` reads the rest.
 */
function download(base: string): Promise<{ finish: () => Promise<string> }> {
  return new Promise((resolve, reject) => {
    http
      .get(`${base}/api/v1/nonsense?format=csv`, (res) => {
        let text = '';
        res.setEncoding('utf8');
        const ended = new Promise<string>((done, failed) => {
          res.on('end', () => done(text));
          res.on('error', failed);
        });
        res.once('data', (first: string) => {
          text += first;
          res.pause();
          resolve({
            finish: () => {
              res.on('data', (chunk: string) => (text += chunk));
              res.resume();
              return ended;
            },
          });
        });
      })
      .on('error', reject);
  });
}

/**
 * How soon the server is to exit once the last download has ended: well within the grace, which it
 * must not sit out because the client keeps its connection alive (as Node's own client does).
 */
const AFTER_LAST_DOWNLOAD_MS = 3000;

/**
 * The seeded entries: an export of them (about 12 MB) outlasts a paused reader's socket buffers,
 * which on loopback grow to several megabytes, so the server is still draining when the test says so.
 */
const ENTRIES = 20_000;
const FILLER = ' It goes on and on, as real nonsense does, until the line is long.'.repeat(8);

describe('the service under a process manager', { timeout: 90_000 }, () => {
  let dir: string;
  let seeded: string;
  let n = 0;
  /** A new database file with the seeded entries. */
  const database = () => {
    const file = path.join(dir, `db-${n++}.db`);
    fs.copyFileSync(seeded, file);
    return file;
  };

  beforeAll(async () => {
    dir = tempDir();
    seeded = path.join(dir, 'seeded.db');
    const db = await openDatabase(loadConfig({ DATABASE_URL: seeded }).database);
    await migrate(db);
    await createStorage(db).entries.insertEntries(
      Array.from({ length: ENTRIES }, (_, i) => ({
        uuid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
        text: `Seeded entry number ${i}, long enough to look like real nonsense.${FILLER}`,
        timestamp: 1_600_000_000 + i,
      })),
    );
    await db.close();
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('npm start: SIGTERM to npm stops the server it started, and frees the port', async () => {
    const started = await start('npm', ['start'], { DATABASE_URL: database() });
    expect(started.server).not.toBe(started.child.pid);
    process.kill(started.child.pid!, 'SIGTERM');
    expect(await stopped(started)).toEqual({ code: 0, signal: null });
    expect(started.output()).toMatch(/"signal":"SIGTERM","msg":"shutting down/);
  });

  it('npm start: Ctrl-C (SIGINT to the whole group, so twice to node) lets an in-flight download finish', async () => {
    const started = await start('npm', ['start'], { DATABASE_URL: database() });
    const inFlight = await download(started.base);
    process.kill(-started.child.pid!, 'SIGINT');
    await expect.poll(started.output, { timeout: 5000 }).toMatch(/shutting down/);
    const csv = await inFlight.finish();
    expect(csv.split('\r\n').filter(Boolean)).toHaveLength(ENTRIES + 1);
    expect(await stopped(started, AFTER_LAST_DOWNLOAD_MS)).toEqual({ code: 0, signal: null });
  });

  it('bin/nonsense.js: a second SIGTERM while draining does not cut the in-flight download short', async () => {
    const started = await start(process.execPath, [BIN, 'serve'], { DATABASE_URL: database() });
    expect(started.server).toBe(started.child.pid);
    const inFlight = await download(started.base);
    process.kill(started.server, 'SIGTERM');
    await expect.poll(started.output, { timeout: 5000 }).toMatch(/shutting down/);
    process.kill(started.server, 'SIGTERM');
    const csv = await inFlight.finish();
    expect(csv.split('\r\n').filter(Boolean)).toHaveLength(ENTRIES + 1);
    expect(await stopped(started, AFTER_LAST_DOWNLOAD_MS)).toEqual({ code: 0, signal: null });
  });

  it('writes JSON lines when its output is not a terminal, the address first', async () => {
    const started = await start(process.execPath, [BIN, 'serve'], { DATABASE_URL: database() });
    await fetch(`${started.base}/healthz`);
    process.kill(started.server, 'SIGTERM');
    await stopped(started);
    const lines = started
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'));
    expect(lines.length).toBeGreaterThan(3);
    const events = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(events[0]).toMatchObject({ level: 30, msg: `listening on ${started.base}` });
    expect(events).toContainEqual(expect.objectContaining({ msg: 'request', method: 'GET', url: '/healthz', status: 200 }));
  });

  it.skipIf(skipWithout('script (util-linux)', fs.existsSync(SCRIPT), 'apt-get install bsdutils'))(
    'writes one readable line an event on a terminal, the address first',
    async () => {
      // `script` runs the command on a new pseudo-terminal and copies what it writes.
      const started = await start(SCRIPT, ['-qec', `${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} serve`, '/dev/null'], {
        DATABASE_URL: database(),
      });
      await fetch(`${started.base}/api/v1/nonsense/not-a-uuid`);
      await expect.poll(started.output, { timeout: 5000 }).toMatch(/not-a-uuid/);
      process.kill(started.server, 'SIGTERM');
      await stopped(started);
      const output = started.output().replace(/\x1b\[[0-9;]*m/g, '');
      // The command's own warnings (a stale build) share the terminal; they are not log lines.
      const lines = output.split(/\r?\n/).filter((line) => line !== '' && !line.startsWith('nonsense: '));
      expect(lines[0]).toMatch(new RegExp(`^\\[\\d\\d:\\d\\d:\\d\\d\\.\\d{3}\\] INFO: listening on ${started.base}$`));
      expect(lines).toContainEqual(expect.stringMatching(/^\[[\d:.]+\] INFO: GET \/api\/v1\/nonsense\/not-a-uuid 400 [\d.]+ ms$/));
      expect(lines).toContainEqual(expect.stringMatching(/^\[[\d:.]+\] INFO: shutting down: finishing in-flight requests \{"signal":"SIGTERM"\}$/));
      expect(lines.filter((line) => line.startsWith('{'))).toEqual([]);
    },
  );
});
