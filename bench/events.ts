/**
 * The change feed under load (docs/events.md): one service process holds BENCH_STREAMS (5,000) event
 * streams, opened from 100 local addresses (127.0.0.10 to 127.0.0.109, so the per-address limits are
 * met as in production), and
 *
 * - its resident memory may grow by at most 100 MB for them;
 * - one change made through the admin API reaches every stream within 1 s at the 99th percentile
 *   (BENCH_CHANGES changes, one after another, timed from the request that makes each);
 * - the event loop's longest delay while the change is fanned out is shown beside the service's 20 ms
 *   rule;
 * - the change log adds at most 10 % to an import of BENCH_IMPORT (100,000) entries: the same JSON file
 *   is imported into fresh databases with the log and without it (the storage's switch for
 *   measuring it), in turns, three times each, and the fastest of each is compared.
 *
 *   npm run bench:events
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { benchText, memory, startService } from './lib.ts';
import { migrate, openDatabase } from '../src/db/database.ts';
import { importFile } from '../src/import/import-file.ts';
import { setChangeLog } from '../src/storage/changes.ts';
import { createStorage } from '../src/storage/index.ts';

const STREAMS = Number(process.env.BENCH_STREAMS ?? 5000);
const CHANGES = Number(process.env.BENCH_CHANGES ?? 5);
const IMPORT = Number(process.env.BENCH_IMPORT ?? 100_000);
const PORT = Number(process.env.BENCH_PORT ?? 18193);
const ADDRESSES = 100;
const RSS_BOUND_MB = 100;
const DELIVERY_BOUND_MS = 1000;
const IMPORT_BOUND = 0.1;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nonsense-bench-events-'));
const line = (what: string, value: string, bound: string, ok: boolean) => console.log(`${what.padEnd(52)} ${value.padStart(12)}   bound ${bound.padEnd(10)} ${ok ? 'ok' : 'EXCEEDED'}`);

interface Client {
  socket: net.Socket;
  open: Promise<void>;
  got: Map<string, number>;
}

/** openStream opens one event stream on a raw connection from `localAddress`; `open` resolves with its 200. */
function openStream(localAddress: string, waiting: Set<string>, got: Map<string, number>): Client {
  const socket = net.connect({ port: PORT, host: '127.0.0.1', localAddress });
  const client: Client = { socket, open: Promise.resolve(), got };
  client.open = new Promise((resolve, reject) => {
    let head = true;
    socket.setEncoding('utf8');
    socket.on('data', (text: string) => {
      if (head) {
        if (!text.startsWith('HTTP/1.1 200')) reject(new Error(`a stream was refused: ${text.split('\r\n')[0]}`));
        head = false;
        resolve();
      }
      for (const marker of waiting) if (text.includes(marker) && !client.got.has(marker)) client.got.set(marker, performance.now());
    });
    socket.on('error', reject);
  });
  socket.write(`GET /api/v1/nonsense/events HTTP/1.1\r\nHost: 127.0.0.1:${PORT}\r\nAccept: text/event-stream\r\n\r\n`);
  return client;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function streams(): Promise<void> {
  const database = path.join(dir, 'streams.db');
  const service = await startService({
    PORT: String(PORT),
    DATABASE_URL: database,
    LOG_LEVEL: 'warn',
    GALAXY: 'off',
    EVENTS_MAX_STREAMS: String(STREAMS),
    EVENTS_MAX_STREAMS_PER_CLIENT: String(Math.ceil(STREAMS / ADDRESSES)),
    OVERLOAD_MAX_EVENT_LOOP_DELAY: 'off',
  });
  try {
    const token = spawnSync(process.execPath, ['bin/nonsense.js', 'token', 'create', 'bench'], { env: { ...process.env, DATABASE_URL: database }, encoding: 'utf8' }).stdout.trim().split('\n').at(-1)!;
    await (await fetch(`${service.url}/api/v1/nonsense/status`)).text();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    // The same kind of change with no stream open: what the write itself costs the event loop.
    let baseLag = 0;
    for (let n = 0; n < CHANGES; n++) {
      await (await fetch(`${service.url}/metrics`)).text();
      const res = await fetch(`${service.url}/api/v1/admin/nonsense`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ text: `Bench change number ${n} before any stream.` }),
      });
      if (res.status !== 201) throw new Error(`the change was refused: ${res.status} ${await res.text()}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
      const metrics = await (await fetch(`${service.url}/metrics`)).text();
      baseLag = Math.max(baseLag, Number(/^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(metrics)?.[1] ?? 0) * 1000);
    }
    const heap = async () => Number(/^nodejs_heap_size_used_bytes (\S+)$/m.exec(await (await fetch(`${service.url}/metrics`)).text())?.[1] ?? 0) / 2 ** 20;
    const before = memory(service.pid).rss;
    const heapBefore = await heap();

    const waiting = new Set<string>();
    const clients: Client[] = [];
    for (let i = 0; i < STREAMS; i += 250) {
      const batch = Array.from({ length: Math.min(250, STREAMS - i) }, (_, k) => openStream(`127.0.0.${10 + ((i + k) % ADDRESSES)}`, waiting, new Map()));
      await Promise.all(batch.map((client) => client.open));
      clients.push(...batch);
    }
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const after = memory(service.pid).rss;
    line(`RSS growth for ${STREAMS} open streams`, `${(after - before).toFixed(1)} MB`, `${RSS_BOUND_MB} MB`, after - before <= RSS_BOUND_MB);
    line(`  of which the JavaScript heap in use`, `${((await heap()) - heapBefore).toFixed(1)} MB`, '', true);

    const latencies: number[] = [];
    let lagMax = 0;
    for (let n = 0; n < CHANGES; n++) {
      const marker = `Bench change number ${n} for every stream.`;
      waiting.add(marker);
      // Reading the metrics resets the event loop's maximum delay: the next read covers this change.
      await (await fetch(`${service.url}/metrics`)).text();
      const started = performance.now();
      const res = await fetch(`${service.url}/api/v1/admin/nonsense`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ text: marker }),
      });
      if (res.status !== 201) throw new Error(`the change was refused: ${res.status} ${await res.text()}`);
      const deadline = performance.now() + 10_000;
      while (clients.some((client) => !client.got.has(marker)) && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      for (const client of clients) latencies.push((client.got.get(marker) ?? Number.POSITIVE_INFINITY) - started);
      const metrics = await (await fetch(`${service.url}/metrics`)).text();
      lagMax = Math.max(lagMax, Number(/^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(metrics)?.[1] ?? 0) * 1000);
      waiting.delete(marker);
    }
    const settled = memory(service.pid).rss;
    line(`RSS growth with ${STREAMS} streams, after ${CHANGES} changes`, `${(settled - before).toFixed(1)} MB`, `${RSS_BOUND_MB} MB`, settled - before <= RSS_BOUND_MB);
    latencies.sort((a, b) => a - b);
    const p99 = percentile(latencies, 99);
    line(`delivery of a change to ${STREAMS} streams, p50`, `${percentile(latencies, 50).toFixed(0)} ms`, '', true);
    line(`delivery of a change to ${STREAMS} streams, p99`, `${p99.toFixed(0)} ms`, `${DELIVERY_BOUND_MS} ms`, p99 <= DELIVERY_BOUND_MS);
    line(`delivery of a change to ${STREAMS} streams, max`, `${latencies.at(-1)!.toFixed(0)} ms`, '', true);
    line('longest event-loop delay, the same changes without streams', `${baseLag.toFixed(1)} ms`, '', true);
    line('longest event-loop delay while changes were fanned out', `${lagMax.toFixed(1)} ms`, '(20 ms)', true);
    for (const client of clients) client.socket.destroy();
  } finally {
    await service.stop();
  }
}

async function importOnce(file: string, logged: boolean, n: number): Promise<number> {
  const target = path.join(dir, `import-${logged ? 'log' : 'nolog'}-${n}.db`);
  const database = await openDatabase({ engine: 'sqlite', file: target });
  try {
    await migrate(database);
    const storage = createStorage(database);
    setChangeLog(database.db, logged);
    const started = performance.now();
    const result = await importFile(storage, file, { format: 'json' });
    const ms = performance.now() - started;
    if (result.added !== IMPORT) throw new Error(`the import added ${result.added} entries, not ${IMPORT}`);
    const logRows = Number((await database.db.selectFrom('changes').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
    if (logRows !== (logged ? IMPORT : 0)) throw new Error(`the log holds ${logRows} changes`);
    return ms;
  } finally {
    await database.close();
    for (const suffix of ['', '-wal', '-shm']) fs.rmSync(target + suffix, { force: true });
  }
}

async function imports(): Promise<void> {
  const file = path.join(dir, 'import.json');
  const entries = Array.from({ length: IMPORT }, (_, n) => ({
    uuid: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
    nonsense: benchText(n),
    timestamp: 1_700_000_000 + n,
  }));
  fs.writeFileSync(file, JSON.stringify(entries));
  const times = { log: [] as number[], nolog: [] as number[] };
  for (let round = 0; round < 3; round++) {
    times.nolog.push(await importOnce(file, false, round));
    times.log.push(await importOnce(file, true, round));
  }
  const without = Math.min(...times.nolog);
  const withLog = Math.min(...times.log);
  const added = withLog / without - 1;
  line(`import of ${IMPORT} entries without the change log`, `${(without / 1000).toFixed(2)} s`, '', true);
  line(`import of ${IMPORT} entries with the change log`, `${(withLog / 1000).toFixed(2)} s`, '', true);
  line('time the change log adds to the import', `${(added * 100).toFixed(1)} %`, `${IMPORT_BOUND * 100} %`, added <= IMPORT_BOUND);
}

// BENCH_PART=streams or import runs one half.
const part = process.env.BENCH_PART;
try {
  if (part !== 'import') await streams();
  if (part !== 'streams') await imports();
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
