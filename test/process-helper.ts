/**
 * The service and the command line as real processes, for the tests that need them: one way to start
 * `nonsense serve` and wait for it (bounded), one way to run a command, one environment for both.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './helper.ts';
import { until } from './wait.ts';

export const BIN = path.resolve('bin/nonsense.js');

// Vite sets BASE_URL for its own use; the service must not inherit it.
const { BASE_URL: _viteBase, ...inherited } = process.env;
/** The environment a spawned command starts from: the test's own, less what the test runner set for itself. */
export const parentEnv: NodeJS.ProcessEnv = inherited;

const execFileAsync = promisify(execFile);

/** runCommand runs `nonsense ARGS` to its end and returns its exit code and output; it never throws. */
export async function runCommand(args: string[], env: Record<string, string> = {}, options: { cwd?: string; timeoutMs?: number } = {}) {
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, [BIN, ...args], {
      env: { ...parentEnv, LOG_LEVEL: 'warn', ...env },
      cwd: options.cwd,
      timeout: options.timeoutMs ?? 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

export interface RunningService {
  /** `http://127.0.0.1:<port>` */
  base: string;
  port: number;
  child: ChildProcess;
  /** Everything the process wrote so far, standard output and error together. */
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** stop sends the signal (default SIGTERM) and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * startService runs `nonsense serve` on a free port with `env` over the test defaults (no demo data,
 * no read limit, warnings only) and resolves once `readyPath` answers 200. It fails with the
 * process's output when the process exits first or is not ready within `timeoutMs`.
 */
export async function startService(
  env: Record<string, string>,
  { readyPath = '/readyz', timeoutMs = 20_000 }: { readyPath?: string; timeoutMs?: number } = {},
): Promise<RunningService> {
  const port = await freePort();
  const child = spawn(process.execPath, [BIN, 'serve'], {
    env: { ...parentEnv, LOG_LEVEL: 'warn', DEMO_DATA: 'off', RATE_LIMIT_READ: 'off', PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const base = `http://127.0.0.1:${port}`;
  try {
    await until(
      () => `nonsense serve to be ready:\n${output}`,
      async () => {
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`nonsense serve exited before it was ready:\n${output}`);
        return fetch(`${base}${readyPath}`, { signal: AbortSignal.timeout(2000) }).then((res) => res.ok, () => false);
      },
      { timeoutMs, intervalMs: 50 },
    );
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  return {
    base,
    port,
    child,
    output: () => output,
    exited,
    stop: (signal = 'SIGTERM') => {
      child.kill(signal);
      return exited;
    },
  };
}
