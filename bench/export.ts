/**
 * The full CSV export over HTTP against the sqlite3 command-line shell writing CSV from the same
 * database file, in the same run, alternating: wall time, throughput and the service's peak resident
 * memory over its idle figure. The shell is Debian's `sqlite3` (`apt-get install sqlite3`); without it
 * the benchmark says so and stops. A first export, reported apart and left out of the medians, warms
 * the service up: it starts the export worker, and V8 optimises the worker's code over its first
 * pages (here the first export took twice as long as the third, and the second a fifth longer).
 * The memory figures include it.
 *
 *   npm run bench:export                 # 200,000 entries, a warm-up and 5 rounds
 *   EXPORT_ENTRIES=1000000 EXPORT_ROUNDS=1 BENCH_KEEP=1 npm run bench:export
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { median, memory, seed, startService, waitForQuiet } from './lib.ts';

const ENTRIES = Number(process.env.EXPORT_ENTRIES ?? 200_000);
const ROUNDS = Number(process.env.EXPORT_ROUNDS ?? 5);
const PORT = String(process.env.EXPORT_PORT ?? 18191);

const version = spawnSync('sqlite3', ['-version'], { encoding: 'utf8' });
if (version.error !== undefined || version.status !== 0) {
  console.error('bench:export compares with the sqlite3 command-line shell, which is not installed. On Debian: apt-get install sqlite3');
  process.exit(2);
}
console.log(`sqlite3 ${version.stdout.trim().split(' ')[0]}`);

/** kib reads VmHWM (peak resident memory) of a process, in KiB (Linux). */
function peakKib(pid: number): number {
  try {
    return Number(/^VmHWM:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** download reads the whole export, counting bytes; resolves with the seconds it took. */
function download(): Promise<{ seconds: number; bytes: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    http
      .get(`http://127.0.0.1:${PORT}/api/v1/nonsense?format=csv`, (res) => {
        let bytes = 0;
        res.on('data', (chunk: Buffer) => (bytes += chunk.length));
        res.on('end', () => resolve({ seconds: (performance.now() - started) / 1000, bytes }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

/** shell runs sqlite3 -csv with the export's query, polling its peak memory while it runs. */
function shell(file: string): Promise<{ seconds: number; bytes: number; peakKib: number }> {
  const started = performance.now();
  const query = "select uuid, text, created_at from entries where state = 'visible' order by created_at, uuid";
  const child = spawn('sqlite3', ['-csv', '-header', file, query], { stdio: ['ignore', 'pipe', 'inherit'] });
  let bytes = 0;
  let peak = 0;
  const poll = setInterval(() => (peak = Math.max(peak, peakKib(child.pid!))), 20);
  child.stdout.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    peak = Math.max(peak, peakKib(child.pid!));
  });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      clearInterval(poll);
      if (code !== 0) reject(new Error(`sqlite3 exited with ${code}`));
      else resolve({ seconds: (performance.now() - started) / 1000, bytes, peakKib: peak });
    });
  });
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nonsense-export-bench-'));
try {
  const seeded = await seed(ENTRIES, dir);
  console.log(`${ENTRIES} entries (${seeded.fresh ? 'seeded now' : 'reused'}); database ${(fs.statSync(seeded.file).size / 1e6).toFixed(1)} MB`);
  const service = await startService({ DATABASE_URL: seeded.file, PORT, LOG_LEVEL: 'warn', RATE_LIMIT_READ: 'off' });
  try {
    // Idle first: with GALAXY=auto the galaxy's thread lays the entries out after the start.
    const quiet = await waitForQuiet(service.pid);
    if (quiet === null) console.log('the service was still busy after the start (the galaxy thread?) when the export began');
    const idle = memory(service.pid).rss;
    const own: number[] = [];
    const baseline: number[] = [];
    let serviceBytes = 0;
    let shellBytes = 0;
    let shellPeak = 0;
    let peakRss = idle;
    for (let round = -1; round < ROUNDS; round++) {
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          peakRss = Math.max(peakRss, memory(service.pid).rss);
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
      })();
      const s = await download();
      sampling = false;
      await sampler;
      if (round === -1) {
        console.log(`warm-up (starts the export worker): service ${s.seconds.toFixed(2)} s (${(s.bytes / 1e6).toFixed(1)} MB)`);
        continue;
      }
      const b = await shell(seeded.file);
      own.push(s.seconds);
      baseline.push(b.seconds);
      serviceBytes = s.bytes;
      shellBytes = b.bytes;
      shellPeak = Math.max(shellPeak, b.peakKib);
      console.log(`round ${round + 1}: service ${s.seconds.toFixed(2)} s (${(s.bytes / 1e6).toFixed(1)} MB), sqlite3 -csv ${b.seconds.toFixed(2)} s (${(b.bytes / 1e6).toFixed(1)} MB)`);
    }
    const ratio = median(baseline) / median(own);
    console.log(`\n${ENTRIES} entries, ${ROUNDS} rounds after a warm-up, medians`);
    console.log('| export | service | sqlite3 -csv | ratio (sqlite3 time / service time) | service RSS idle → peak (growth) | sqlite3 peak RSS |');
    console.log('|---|---|---|---|---|---|');
    console.log(
      `| full CSV, ${ENTRIES.toLocaleString('en')} entries | ${median(own).toFixed(2)} s, ${(serviceBytes / 1e6 / median(own)).toFixed(1)} MB/s, ${Math.round(ENTRIES / median(own)).toLocaleString('en')} rows/s | ` +
        `${median(baseline).toFixed(2)} s, ${(shellBytes / 1e6 / median(baseline)).toFixed(1)} MB/s | **${ratio.toFixed(2)}** | ` +
        `${idle.toFixed(0)} → ${peakRss.toFixed(0)} MiB (+${(peakRss - idle).toFixed(0)}) | ${(shellPeak / 1024).toFixed(0)} MiB |`,
    );
  } finally {
    await service.stop();
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
