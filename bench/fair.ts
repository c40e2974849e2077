/**
 * Fair share: one greedy address against a victim. The greedy address (127.0.0.2) keeps
 * BENCH_GREEDY (80) full CSV exports going at once, each read at full speed and sent again as soon as
 * it ends, or once the `Retry-After` of a refusal has passed (a client that ignores it floods the
 * service with requests, which is the rate limit's to answer: RATE_LIMIT_READ); meanwhile the victim (127.0.0.3) asks, one after another, for a page of the
 * site's search and for an export of a filtered part, and the time to each answer's first byte is
 * measured. The same victim requests are timed first with the service idle, in the same run.
 * Bound: every victim request answers 200 within 1 s while the greedy address runs.
 *
 *   npm run bench:fair                  # BENCH_ENTRIES=100000, BENCH_SECONDS=20 by default
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { seed, startService } from './lib.ts';

const ENTRIES = Number(process.env.BENCH_ENTRIES ?? 100_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const GREEDY = Number(process.env.BENCH_GREEDY ?? 80);
const PORT = Number(process.env.BENCH_PORT ?? 18192);
const BOUND_MS = 1000;

interface Answer {
  status: number | 'error';
  firstByteMs: number;
  totalMs: number;
}

/** get asks for `url` from `localAddress` on a new connection and reads the whole answer. */
function get(url: string, localAddress: string): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve) => {
    const failed = () => resolve({ status: 'error', firstByteMs: performance.now() - started, totalMs: performance.now() - started });
    http
      .get(url, { localAddress, agent: false }, (res) => {
        const firstByteMs = performance.now() - started;
        res.on('data', () => {});
        res.on('end', () => resolve({ status: res.statusCode!, firstByteMs, totalMs: performance.now() - started }));
        res.on('error', failed);
      })
      .on('error', failed);
  });
}

/**
 * The greedy client: `clients` exports at once from 127.0.0.2 on kept-alive connections (past the
 * per-address connection limit too), each sent again as soon as it ends, or once the `Retry-After` of
 * a refusal has passed; on "stop" it posts the count of answers by status.
 */
const GREEDY_CLIENT = `
const http = require('node:http');
const { parentPort, workerData } = require('node:worker_threads');
const agent = new http.Agent({ keepAlive: true, maxSockets: workerData.clients, localAddress: '127.0.0.2' });
const counts = {};
let stop = false;
parentPort.once('message', () => (stop = true));
const once = () => new Promise((resolve) => {
  const done = (status, wait) => { counts[status] = (counts[status] ?? 0) + 1; setTimeout(resolve, wait); };
  http.get(workerData.url, { agent }, (res) => {
    res.on('data', () => {});
    res.on('end', () => done(res.statusCode, Number(res.headers['retry-after'] ?? 0) * 1000));
    res.on('error', () => done('error', 100));
  }).on('error', () => done('error', 100));
});
Promise.all(Array.from({ length: workerData.clients }, async () => { while (!stop) await once(); }))
  .then(() => { agent.destroy(); parentPort.postMessage(counts); });
`;

const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? NaN;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nonsense-fair-'));
const seeded = await seed(ENTRIES, dir);
const service = await startService({ DATABASE_URL: seeded.file, PORT: String(PORT), LOG_LEVEL: 'warn', RATE_LIMIT_READ: 'off', GALAXY: 'off' });
const base = service.url;
const VICTIM_URLS = [`${base}/search?q=weather`, `${base}/api/v1/nonsense?format=json&after=${1_600_000_000 + ENTRIES - 2000}`];

/** victim runs the victim's requests one after another until `until`, and returns their answers by URL. */
async function victim(until: number): Promise<Map<string, Answer[]>> {
  const answers = new Map<string, Answer[]>(VICTIM_URLS.map((url) => [url, []]));
  while (performance.now() < until) {
    for (const url of VICTIM_URLS) answers.get(url)!.push(await get(url, '127.0.0.3'));
  }
  return answers;
}

const rows: string[] = [];
let within = true;
function report(phase: string, answers: Map<string, Answer[]>, bounded: boolean): void {
  for (const [url, list] of answers) {
    const ok = list.filter((a) => a.status === 200);
    const first = list.map((a) => a.firstByteMs);
    const max = Math.max(...first);
    const pass = ok.length === list.length && max <= BOUND_MS;
    if (bounded && !pass) within = false;
    rows.push(
      `| ${phase} | ${new URL(url).pathname}${new URL(url).search.slice(0, 24)} | ${list.length} | ${ok.length} | ` +
        `${quantile(first, 0.5).toFixed(0)} | ${quantile(first, 0.95).toFixed(0)} | ${max.toFixed(0)} | ${quantile(list.map((a) => a.totalMs), 0.5).toFixed(0)} | ${bounded ? (pass ? 'yes' : 'NO') : ''} |`,
    );
  }
}

try {
  // Warm: the read workers start and the schemas compile, as after any start.
  for (const url of VICTIM_URLS) await get(url, '127.0.0.3');
  report('idle', await victim(performance.now() + 5000), false);

  // The greedy client reads in a thread of its own, so that reading its downloads at full speed does
  // not delay the victim's timings in this thread.
  const greedy = new Worker(GREEDY_CLIENT, { eval: true, workerData: { url: `${base}/api/v1/nonsense?format=csv`, clients: GREEDY } });
  const greedyStatus = new Promise<Record<string, number>>((resolve) => greedy.once('message', resolve));
  // Let the greedy address fill every place it can before the victim starts.
  await new Promise((resolve) => setTimeout(resolve, 2000));
  report(`${GREEDY} greedy exports`, await victim(performance.now() + SECONDS * 1000), true);
  greedy.postMessage('stop');
  console.log(`greedy answers: ${Object.entries(await greedyStatus).map(([status, n]) => `${n} × ${status}`).join(', ')}`);
  await greedy.terminate();
} finally {
  await service.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}

console.log(`\nVictim latency (ms to the first byte), ${ENTRIES} entries, ${os.availableParallelism()} cores, bound: every answer 200 within ${BOUND_MS} ms`);
console.log('| phase | request | answers | 200 | p50 | p95 | max | p50 whole answer | within |');
console.log('|---|---|---|---|---|---|---|---|---|');
for (const row of rows) console.log(row);
console.log(within ? '\nEvery victim request was answered within the bound.' : '\nSOME VICTIM REQUESTS MISSED THE BOUND.');
process.exitCode = within ? 0 : 1;
