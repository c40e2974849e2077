/**
 * Start-up time and resident memory of the serving process by database size, each against its
 * baseline in the same run: a bare node:http server (the floor of any Node process), and the service
 * over an empty database (so growth with the entries is the difference).
 *
 * For each size, two starts of the service as `npm start` runs it (compiled, default settings):
 *
 * - the first start on a new database, when the galaxy's thread lays the entries out: the RSS right
 *   after the first answer to GET /api/v1/nonsense/random, and once laid out and quiet;
 * - a restart on the same database, the steady state (its galaxy current, so no layout thread): the
 *   time (and CPU time) from spawning to the first answer, the RSS right after it (the figure the
 *   performance issue bounds), and once the entry cache that request started is complete.
 *
 *   npm run bench:memory                             # 0, 50,000 and 100,000 entries
 *   MEMORY_ENTRIES=0,50000,100000,1000000 BENCH_KEEP=1 npm run bench:memory
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cpuMs, memory, metric, seed, startService, waitForQuiet, waitForSnapshot } from './lib.ts';

const SIZES = (process.env.MEMORY_ENTRIES ?? '0,50000,100000').split(',').map(Number);
const PORT = '18186';
const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The bare server's RSS once it answered one request. */
async function bareRss(): Promise<number> {
  const child = spawn(process.execPath, ['-e', "require('http').createServer((q,s)=>s.end('{}')).listen(+process.env.PORT,'127.0.0.1')"], {
    env: { ...process.env, PORT },
    stdio: 'ignore',
  });
  try {
    for (;;) {
      try {
        await (await fetch(`http://127.0.0.1:${PORT}/`)).arrayBuffer();
        break;
      } catch {
        await settle(10);
      }
    }
    await settle(1000);
    return memory(child.pid!).rss;
  } finally {
    child.kill();
    await new Promise((resolve) => child.once('exit', resolve));
  }
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nonsense-memory-'));
const rows: string[] = [];
try {
  const floor = await bareRss();
  let empty: number | null = null;
  for (const entries of SIZES) {
    const seeded = await seed(entries, dir);
    // The first start on this database: the galaxy's thread lays it out.
    const service = await startService({ DATABASE_URL: seeded.file, PORT }, '/api/v1/nonsense/random');
    let firstStart: string;
    try {
      const first = memory(service.pid);
      const warm = entries === 0 ? 0 : await waitForSnapshot(service.url, entries);
      // Idle: the snapshot built and every background task of the start (the galaxy's layout) done.
      const quiet = await waitForQuiet(service.pid);
      const idle = memory(service.pid);
      firstStart =
        `${first.rss.toFixed(0)} MiB | ${idle.rss.toFixed(0)} MiB | ${warm === null ? 'not complete' : `${(warm / 1000).toFixed(1)} s`} | ` +
        `${quiet === null ? 'busy' : `${(quiet / 1000).toFixed(0)} s`}`;
    } finally {
      await service.stop();
    }
    // The steady state: started again on the same database, its galaxy current (so no layout thread).
    const again = await startService({ DATABASE_URL: seeded.file, PORT }, '/api/v1/nonsense/random');
    try {
      const first = memory(again.pid);
      const startCpu = cpuMs(again.pid);
      if (entries > 0) await waitForSnapshot(again.url, entries);
      await waitForQuiet(again.pid);
      await settle(2000);
      const idle = memory(again.pid);
      const heap = (await metric(again.url, 'nodejs_heap_size_used_bytes'))! / 2 ** 20;
      const snapshot = (await metric(again.url, 'nonsense_cache_bytes{cache="entry_snapshot"}'))! / 2 ** 20;
      if (entries === 0) empty = idle.rss;
      rows.push(
        `| ${entries.toLocaleString('en')} | ${again.startMs.toFixed(0)} ms (CPU ${startCpu.toFixed(0)} ms) | **${first.rss.toFixed(0)} MiB** | ` +
          `${idle.rss.toFixed(0)} MiB (anon ${idle.anon.toFixed(0)}, file ${idle.file.toFixed(0)}) | ${heap.toFixed(0)} MiB | ${snapshot.toFixed(1)} MiB | ` +
          `${empty === null ? '-' : `+${(idle.rss - empty).toFixed(0)} MiB`} | ${firstStart} |`,
      );
      console.log(rows.at(-1));
    } finally {
      await again.stop();
    }
  }
  console.log(`\nbare node:http server after one request: ${floor.toFixed(0)} MiB RSS`);
  console.log(`GALAXY=${process.env.GALAXY ?? 'auto (default)'}`);
  console.log('| entries | restart: first answer after start | RSS after it | RSS idle (cache complete, quiet) | heap used | entry cache | growth over 0 entries | first start: RSS after the first answer | RSS once laid out | cache filled in | quiet after |');
  console.log('|---|---|---|---|---|---|---|---|---|---|---|');
  for (const row of rows) console.log(row);
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
