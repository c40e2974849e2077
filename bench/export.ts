/**
 * The full CSV export over HTTP against the sqlite3 command-line shell writing CSV from the same
 * database file, in the same run: wall time, throughput and the service's peak resident memory.
 *
 *   npm run bench:export                 # 200,000 entries, 3 rounds
 *   EXPORT_ENTRIES=1000000 EXPORT_ROUNDS=1 npm run bench:export
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config.ts';
import { migrate, openDatabase } from '../src/db/database.ts';
import { createStorage } from '../src/storage/index.ts';

const ENTRIES = Number(process.env.EXPORT_ENTRIES ?? 200_000);
const ROUNDS = Number(process.env.EXPORT_ROUNDS ?? 3);
const PORT = Number(process.env.EXPORT_PORT ?? 18191);

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nonsense-export-bench-'));
const dbFile = path.join(dir, 'export.db');

async function seed(): Promise<void> {
  const database = await openDatabase(loadConfig({ DATABASE_URL: dbFile }).database);
  await migrate(database);
  const storage = createStorage(database);
  await storage.variables.insertMissing([{ name: '$ANIMAL$', description: 'An animal.', values: ['goose', 'capybara', 'newt'] }]);
  const batch = 10_000;
  for (let start = 0; start < ENTRIES; start += batch) {
    await storage.entries.insertEntries(
      Array.from({ length: Math.min(batch, ENTRIES - start) }, (_, i) => {
        const n = start + i;
        const text = n % 10 === 0 ? `Entry ${n}: the $ANIMAL$ filed a complaint, "politely", about the weather.` : `Entry ${n}: a sock went missing and came back wiser.`;
        return { uuid: randomUUID(), text, timestamp: 1_600_000_000 + n };
      }),
    );
  }
  await database.close();
}

/** kib reads a figure such as VmRSS or VmHWM of a process, in KiB (Linux). */
function kib(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : 0;
  } catch {
    return 0;
  }
}

async function startService(): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['bin/nonsense.js', 'serve'], {
    env: { ...process.env, DATABASE_URL: dbFile, PORT: String(PORT), LOG_LEVEL: 'warn', DEMO_DATA: 'off', RATE_LIMIT_READ: 'off' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${PORT}/healthz`)).ok) return child;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** download reads the whole export, counting bytes; resolves with the seconds it took. */
function download(): Promise<{ seconds: number; bytes: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    http.get(`http://127.0.0.1:${PORT}/api/v1/nonsense?format=csv`, (res) => {
      let bytes = 0;
      res.on('data', (chunk: Buffer) => (bytes += chunk.length));
      res.on('end', () => resolve({ seconds: (performance.now() - started) / 1000, bytes }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

/** shell runs sqlite3 -csv with the export's query, polling its peak memory while it runs. */
function shell(): Promise<{ seconds: number; bytes: number; peakKib: number }> {
  const started = performance.now();
  const query = "select uuid, text, created_at from entries where state = 'visible' order by created_at, uuid";
  const child = spawn('sqlite3', ['-csv', '-header', dbFile, query], { stdio: ['ignore', 'pipe', 'inherit'] });
  let bytes = 0;
  let peakKib = 0;
  const poll = setInterval(() => (peakKib = Math.max(peakKib, kib(child.pid!, 'VmHWM'))), 20);
  child.stdout.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    peakKib = Math.max(peakKib, kib(child.pid!, 'VmHWM'));
  });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      clearInterval(poll);
      if (code !== 0) reject(new Error(`sqlite3 exited with ${code}`));
      else resolve({ seconds: (performance.now() - started) / 1000, bytes, peakKib });
    });
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const seedStarted = Date.now();
await seed();
console.log(`seeded ${ENTRIES} entries in ${((Date.now() - seedStarted) / 1000).toFixed(1)} s; database ${(fs.statSync(dbFile).size / 1e6).toFixed(1)} MB`);
const service = await startService();
const pid = service.pid!;
try {
  const idleRss = kib(pid, 'VmRSS');
  const service_: number[] = [];
  const baseline: number[] = [];
  let serviceBytes = 0;
  let shellBytes = 0;
  let shellPeak = 0;
  let peakRss = 0;
  for (let round = 0; round < ROUNDS; round++) {
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peakRss = Math.max(peakRss, kib(pid, 'VmRSS'));
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    })();
    const s = await download();
    sampling = false;
    await sampler;
    const b = await shell();
    service_.push(s.seconds);
    baseline.push(b.seconds);
    serviceBytes = s.bytes;
    shellBytes = b.bytes;
    shellPeak = Math.max(shellPeak, b.peakKib);
    console.log(`round ${round + 1}: service ${s.seconds.toFixed(2)} s (${(s.bytes / 1e6).toFixed(1)} MB), sqlite3 -csv ${b.seconds.toFixed(2)} s (${(b.bytes / 1e6).toFixed(1)} MB)`);
  }
  const ratio = median(baseline) / median(service_);
  console.log(`\n${ENTRIES} entries, ${ROUNDS} rounds, medians`);
  console.log('| export | service | sqlite3 -csv | ratio (sqlite3 time / service time) | service RSS idle → peak | sqlite3 peak RSS |');
  console.log('|---|---|---|---|---|---|');
  console.log(
    `| full CSV, ${ENTRIES} entries | ${median(service_).toFixed(2)} s, ${(serviceBytes / 1e6 / median(service_)).toFixed(1)} MB/s, ${Math.round(ENTRIES / median(service_))} rows/s | ` +
      `${median(baseline).toFixed(2)} s, ${(shellBytes / 1e6 / median(baseline)).toFixed(1)} MB/s | ${ratio.toFixed(2)} | ` +
      `${(idleRss / 1024).toFixed(0)} → ${(peakRss / 1024).toFixed(0)} MiB | ${(shellPeak / 1024).toFixed(0)} MiB |`,
  );
} finally {
  service.kill('SIGTERM');
  await new Promise((resolve) => service.once('exit', resolve));
  fs.rmSync(dir, { recursive: true, force: true });
}
