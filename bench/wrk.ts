/**
 * Load from wrk (Debian's `wrk`), a load generator written in C, for answers too large for
 * autocannon: at 75 KB a response autocannon's own parsing in JavaScript is the limit (about 1,100
 * responses a second here, for a bare node:http server as for the service), where wrk drives the
 * same bare server at about 30,000 and the service at 7,800-9,100. Without wrk the benchmark says so
 * and stops.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface WrkResult {
  rps: number;
  /** 99th percentile latency, ms. */
  p99: number;
  /** Socket errors, timeouts and answers other than 2xx or 3xx. */
  errors: number;
}

/** requireWrk stops the process with a message when wrk is not installed. */
export function requireWrk(): void {
  const found = spawnSync('wrk', ['--version'], { encoding: 'utf8' });
  if (found.error !== undefined) {
    console.error('This benchmark drives its load with wrk, which is not installed. On Debian: apt-get install wrk');
    process.exit(2);
  }
}

const UNITS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000 };

/** parseWrk reads wrk's report (with `--latency`). */
export function parseWrk(report: string): WrkResult {
  const rps = Number(/^Requests\/sec:\s+([\d.]+)/m.exec(report)?.[1]);
  const p99 = /^\s+99%\s+([\d.]+)(us|ms|s|m)\s*$/m.exec(report);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(report);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(report)?.[1] ?? 0);
  if (!Number.isFinite(rps) || p99 === null) throw new Error(`unexpected wrk report:\n${report}`);
  const socketErrors = socket === null ? 0 : socket.slice(1).reduce((n, v) => n + Number(v), 0);
  return { rps, p99: Number(p99[1]) * UNITS[p99[2]!]!, errors: socketErrors + non2xx };
}

/**
 * wrk loads `base` for `seconds` over `connections` connections from one thread, asking for `paths`
 * in turn (each connection goes through the list) or for `base` itself.
 */
export async function wrk(base: string, { connections, seconds, paths }: { connections: number; seconds: number; paths?: readonly string[] }): Promise<WrkResult> {
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency'];
  let script: string | undefined;
  if (paths !== undefined && paths.length > 0) {
    script = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'nonsense-wrk-')), 'paths.lua');
    const list = paths.map((p) => JSON.stringify(p)).join(', ');
    fs.writeFileSync(script, `local paths = { ${list} }\nlocal i = 0\nrequest = function()\n  i = i % #paths + 1\n  return wrk.format("GET", paths[i])\nend\n`);
    args.push('-s', script);
  }
  args.push(base);
  try {
    const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', resolve);
    });
    if (code !== 0) throw new Error(`wrk exited with ${code}:\n${out}`);
    return parseWrk(out);
  } finally {
    if (script !== undefined) fs.rmSync(path.dirname(script), { recursive: true, force: true });
  }
}
