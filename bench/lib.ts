/**
 * What the benchmarks share: a seeded database (kept between runs when asked), the service started as
 * production starts it (`bin/nonsense.js serve`, compiled), and the process figures read from /proc.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { loadConfig } from '../src/config.ts';
import { migrate, openDatabase } from '../src/db/database.ts';
import { createStorage } from '../src/storage/index.ts';

/** The bench texts: one in ten with a server variable, as in the earlier reports. */
export function benchText(n: number): string {
  return n % 10 === 0 ? `Entry ${n}: the $ANIMAL$ filed a complaint about the weather.` : `Entry ${n}: a sock went missing and came back wiser.`;
}

export interface Seeded {
  file: string;
  /** Up to 1,000 UUIDs spread over the entries, for by-UUID requests. */
  sample: string[];
  /** Whether it was made now (false: reused from an earlier run). */
  fresh: boolean;
}

/**
 * seed makes an SQLite database of `count` bench entries. With BENCH_KEEP=1 it is kept in the
 * system's temporary folder and reused by the next run with the same count (seeding a million
 * entries takes minutes); otherwise it lives in `dir`.
 */
export async function seed(count: number, dir: string, text: (n: number) => string = benchText): Promise<Seeded> {
  const keep = process.env.BENCH_KEEP === '1';
  const file = keep ? path.join(os.tmpdir(), `nonsense-bench-${count}.db`) : path.join(dir, `bench-${count}.db`);
  const sampleFile = `${file}.sample.json`;
  if (keep && fs.existsSync(file) && fs.existsSync(sampleFile)) return { file, sample: JSON.parse(fs.readFileSync(sampleFile, 'utf8')), fresh: false };
  fs.rmSync(file, { force: true });
  const database = await openDatabase(loadConfig({ DATABASE_URL: file }).database);
  await migrate(database);
  const storage = createStorage(database);
  await storage.variables.insertMissing([{ name: '$ANIMAL$', description: 'An animal.', values: ['goose', 'capybara', 'newt'] }]);
  const every = Math.max(1, Math.floor(count / 1000));
  const sample: string[] = [];
  for (let start = 0; start < count; start += 10_000) {
    const batch = Array.from({ length: Math.min(10_000, count - start) }, (_, i) => {
      const n = start + i;
      const uuid = randomUUID();
      if (n % every === 0) sample.push(uuid);
      return { uuid, text: text(n), timestamp: 1_600_000_000 + n };
    });
    await storage.entries.insertEntries(batch);
  }
  await database.close();
  fs.writeFileSync(sampleFile, JSON.stringify(sample));
  return { file, sample, fresh: true };
}

export interface Service {
  child: ChildProcess;
  pid: number;
  url: string;
  /** Milliseconds from spawning the process to its first answer. */
  startMs: number;
  stop(): Promise<void>;
}

/** How long a service may take to answer its first request. */
const START_TIMEOUT_MS = 60_000;

/** The words of `npm start` (package.json): environment assignments, `node`, its flags, `bin/nonsense.js serve`. */
function startWords(): string[] {
  return (JSON.parse(fs.readFileSync('package.json', 'utf8')) as { scripts: { start: string } }).scripts.start.split(/\s+/);
}

/** The environment `npm start` sets (package.json: the allocator's settings, docs/deployment.md). */
export function startEnv(): Record<string, string> {
  const words = startWords();
  return Object.fromEntries(words.slice(0, words.indexOf('node')).map((word) => [word.slice(0, word.indexOf('=')), word.slice(word.indexOf('=') + 1)]));
}

/** The Node flags of `npm start` (package.json), so that the benchmarks run the service as it does. */
export function startFlags(): string[] {
  const words = startWords();
  return words.slice(words.indexOf('node') + 1, words.indexOf('bin/nonsense.js'));
}

/**
 * startService runs the service as `npm start` does (`<its environment> node <its flags> bin/nonsense.js
 * serve`) with the default configuration plus `env`, and resolves once it answers `probe` (a path).
 */
export async function startService(
  env: Record<string, string>,
  probe = '/healthz',
  nodeFlags: string[] = [...startFlags(), ...(process.env.BENCH_NODE_FLAGS?.split(' ') ?? [])],
  /** The command's script: `bin/nonsense.js`, or a saved build's `cli.js` (bench/ab.ts). */
  script = 'bin/nonsense.js',
): Promise<Service> {
  const port = env.PORT!;
  const started = performance.now();
  const child = spawn(process.execPath, [...nodeFlags, script, 'serve'], {
    env: { ...startEnv(), ...process.env, DEMO_DATA: 'off', ...env },
    // BENCH_STDOUT=1 shows the service's standard output (the access log, and what a flag such as
    // BENCH_NODE_FLAGS=--trace-gc prints there).
    stdio: ['ignore', process.env.BENCH_STDOUT ? 'inherit' : 'ignore', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let startMs: number;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode}`);
    if (performance.now() - started > START_TIMEOUT_MS) {
      child.kill('SIGKILL');
      throw new Error(`the service did not answer ${probe} within ${START_TIMEOUT_MS / 1000} s`);
    }
    try {
      const res = await fetch(`http://127.0.0.1:${port}${probe}`);
      await res.arrayBuffer();
      startMs = performance.now() - started;
      break;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
  return {
    child,
    pid: child.pid!,
    url: `http://127.0.0.1:${port}`,
    startMs,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** metric reads one unlabelled or exactly labelled sample from the service's /metrics. */
export async function metric(url: string, name: string): Promise<number | null> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? null : Number(line.slice(name.length + 1));
}

/**
 * waitForSnapshot asks for random entries until the entry cache holds `count` entries (the
 * steady state), or gives up after `timeoutMs`; resolves with the milliseconds it took, or null.
 */
export async function waitForSnapshot(url: string, count: number, timeoutMs = 300_000): Promise<number | null> {
  const started = performance.now();
  while (performance.now() - started < timeoutMs) {
    await (await fetch(`${url}/api/v1/nonsense/random`)).arrayBuffer();
    if ((await metric(url, 'nonsense_cache_items{cache="entry_snapshot"}')) === count) return performance.now() - started;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return null;
}

/**
 * waitForQuiet waits until the process has used less than 5 % of a core for two seconds in a row: the
 * work that follows a start (the entry cache, the galaxy's layout in its thread) is done, and what
 * is measured next is the requests alone. Resolves with the milliseconds it took, or null on timeout.
 */
export async function waitForQuiet(pid: number, timeoutMs = Number(process.env.BENCH_QUIET_TIMEOUT_MS ?? 900_000)): Promise<number | null> {
  const started = performance.now();
  let quietSeconds = 0;
  while (performance.now() - started < timeoutMs) {
    const before = cpuMs(pid);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    quietSeconds = cpuMs(pid) - before < 50 ? quietSeconds + 1 : 0;
    if (quietSeconds >= 2) return performance.now() - started;
  }
  return null;
}

/** memory reads a process's resident memory in MiB: total, anonymous (heap and buffers) and file-backed (code, mapped files). */
export function memory(pid: number): { rss: number; anon: number; file: number; peak: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
  return { rss: kib('VmRSS') / 1024, anon: kib('RssAnon') / 1024, file: (kib('RssFile') + kib('RssShmem')) / 1024, peak: kib('VmHWM') / 1024 };
}

/** One round of load on a server: its requests a second, p99 latency, failures, and CPU time a request. */
export interface LoadRound {
  rps: number;
  p99: number;
  errors: number;
  /** The server's CPU time per request, µs. */
  cpu: number;
}

/**
 * loadRound drives `url` with autocannon for `seconds` over `connections` connections (cycling
 * through `paths` when given) and reads the CPU time the server `pid` spent meanwhile.
 */
export async function loadRound(url: string, pid: number, { connections, seconds, paths }: { connections: number; seconds: number; paths?: string[] | undefined }): Promise<LoadRound> {
  let i = 0;
  const before = cpuMs(pid);
  const result = await autocannon({
    url,
    connections,
    duration: seconds,
    requests: paths ? [{ setupRequest: (req) => ({ ...req, path: paths[i++ % paths.length]! }) }] : undefined,
  });
  const cpu = ((cpuMs(pid) - before) * 1000) / Math.max(1, result.requests.total);
  return { rps: result.requests.average, p99: result.latency.p99, errors: result.errors + result.non2xx, cpu };
}

/** The unit of /proc/<pid>/stat's CPU times: USER_HZ on Linux. */
const CLOCK_TICK = 100;

/** cpuMs reads a process's CPU time so far (user and system), in milliseconds. */
export function cpuMs(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICK;
}

/** median is the middle value, or the mean of the two middle values of an even count. */
export function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** A figure of /proc/<pid>/status (VmRSS, VmHWM) in KiB, and utime + stime in seconds. */
function procStatus(pid: number): { hwm: number; cpu: number } {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return { hwm: Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1] ?? 0), cpu: (Number(stat[11]) + Number(stat[12])) / CLOCK_TICK };
  } catch {
    return { hwm: 0, cpu: 0 };
  }
}

/** runCommand runs `nonsense <args>` to its end, sampling its peak RSS and CPU time (all its threads). */
export async function runCommand(args: string[], env: Record<string, string>): Promise<{ seconds: number; cpu: number; peakMiB: number; stdout: string }> {
  const started = performance.now();
  const child = spawn(process.execPath, ['bin/nonsense.js', ...args], {
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  let last = { hwm: 0, cpu: 0 };
  const poll = setInterval(() => {
    const now = procStatus(child.pid!);
    if (now.hwm > 0) last = now;
  }, 50);
  const code = await new Promise<number>((resolve) => child.on('exit', (c) => resolve(c ?? 1)));
  clearInterval(poll);
  if (code !== 0) throw new Error(`nonsense ${args.join(' ')} failed (${code}):\n${stderr}`);
  return { seconds: (performance.now() - started) / 1000, cpu: last.cpu, peakMiB: last.hwm / 1024, stdout: stdout.trim() };
}
