/**
 * Share card figures, each against its baseline in the same run:
 *   1. new cards: request latency of cards never drawn before, one at a time, after the render
 *      worker is warm (and the worker's own render time from /metrics);
 *   2. cached cards: wrk (Debian's `wrk`, bench/wrk.ts) against cards in the card cache, alternating
 *      with a bare node:http server answering the same PNG bytes;
 *   3. hostile cards: an entry whose server variables expand to 66,600 characters, and one using an
 *      emoji whose PNG declares 60,000 × 60,000 pixels (437 KB, stored without the upload check):
 *      status, time and the service's resident memory around each, and a repeat of each;
 *   4. font memory: the resident memory the renderer gains by drawing its first cards of each
 *      script, each in a fresh process, after ten Latin cards and a full garbage collection.
 *
 * The service's resident memory (the whole process, render threads included, from /proc) is sampled
 * through parts 1 to 3, and its peak printed with the figures.
 *
 *   npm run bench:cards     # BENCH_SECONDS=5 BENCH_ROUNDS=3 BENCH_CONNECTIONS=20 by default;
 *                           # BENCH_FONT_MEMORY=off leaves part 4 out
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config.ts';
import { migrate, openDatabase } from '../src/db/database.ts';
import type * as Fonts from '../src/formats/share-image/fonts.ts';
import type * as Render from '../src/formats/share-image/render.ts';
import { createStorage } from '../src/storage/index.ts';
import { sampleCardInput, samples } from '../test/formats/share-image-samples.ts';
import { blackPng } from '../test/png.ts';
import { memory, startService } from './lib.ts';
import { requireWrk, wrk } from './wrk.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
const NEW_CARDS = Number(process.env.BENCH_NEW_CARDS ?? 40);
const SERVICE_PORT = 18281;
const BARE_PORT = 18282;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;
const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

/**
 * One font-memory measurement, run in a child process of its own (`--font-memory <sample name>`,
 * with --expose-gc): the renderer in-process, exactly as a render worker runs it, so the memory a
 * script's first card adds can be read after a full garbage collection.
 */
async function fontMemory(name: string): Promise<void> {
  // The compiled renderer, as production runs it (the benchmark's npm script builds dist/ first).
  const { renderShareImage } = (await import(new URL('../dist/formats/share-image/render.js', import.meta.url).href)) as typeof Render;
  const { loadedFonts } = (await import(new URL('../dist/formats/share-image/fonts.js', import.meta.url).href)) as typeof Fonts;
  const gc = (globalThis as { gc?: () => void }).gc!;
  const settle = () => {
    for (let i = 0; i < 3; i++) gc();
    return process.memoryUsage();
  };
  const latin = sampleCardInput(samples.find((s) => s.name === 'latin')!);
  for (let i = 0; i < 10; i++) await renderShareImage({ ...latin, text: `${latin.text} ${i}` });
  const before = settle();
  const sample = samples.find((s) => s.name === name)!;
  const started = performance.now();
  await renderShareImage(sampleCardInput(sample));
  const first = performance.now() - started;
  const warm: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    await renderShareImage(sampleCardInput({ ...sample, text: `${sample.text} ${i}` }));
    warm.push(performance.now() - t0);
  }
  const after = settle();
  const result = { name, rss: after.rss - before.rss, heap: after.heapUsed - before.heapUsed, external: after.external - before.external, fonts: loadedFonts(), first, warm: median(warm) };
  if (process.send) process.send(result);
  else console.log(result);
}

/** The hostile entries of part 3: their UUIDs, and what each is. */
const HOSTILE = [
  { uuid: '0badca7d-0000-4000-8000-000000000001', what: 'variables expanding to 66,600 characters', text: '$LONG$'.repeat(333) },
  { uuid: '0badca7d-0000-4000-8000-000000000002', what: 'an emoji declaring 60,000 × 60,000 pixels', text: 'Look at this :huge: emoji.' },
];


async function seed(file: string, count: number): Promise<string[]> {
  const database = await openDatabase(loadConfig({ DATABASE_URL: file }).database);
  await migrate(database);
  const storage = createStorage(database);
  const uuids = Array.from({ length: count }, () => randomUUID());
  await storage.entries.insertEntries(
    uuids.map((uuid, n) => ({ uuid, text: `Card ${n}: the committee of geese postponed Tuesday until the bread question is settled.`, timestamp: 1_600_000_000 + n })),
  );
  // Within the admin API's limits: 1,998 characters, values of 200 characters.
  const value = (i: number) => `value ${i} of a long variable with plenty of words to fill a card `.repeat(4).slice(0, 200);
  await storage.variables.insertMissing([{ name: '$LONG$', description: 'Long values.', values: [0, 1, 2, 3, 4].map(value) }]);
  await storage.entries.insertEntries(HOSTILE.map(({ uuid, text }, n) => ({ uuid, text, timestamp: 1_500_000_000 + n })));
  // Stored as an older version or another tool could have: the upload route would refuse it.
  await storage.emojis.put('huge', 'image/png', await blackPng(60_000), 'bench');
  await database.close();
  return uuids;
}

/** timedStatus reads a whole answer and returns its status and how long it took, in ms. */
async function timedStatus(url: string): Promise<{ status: number; ms: number }> {
  const t0 = performance.now();
  const res = await fetch(url);
  await res.arrayBuffer();
  return { status: res.status, ms: performance.now() - t0 };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

/** timedGet reads a whole answer and returns how long it took, in ms. */
function timedGet(url: string): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    http.get(url, { agent }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve(performance.now() - t0) : reject(new Error(`${url}: ${res.statusCode}`))));
    }).on('error', reject);
  });
}

/** measure loads `url` with wrk: at 75 KB an answer, autocannon itself was the limit (bench/wrk.ts). */
const measure = (url: string, paths?: string[]) => wrk(url, { connections: CONNECTIONS, seconds: SECONDS, ...(paths ? { paths } : {}) });

async function main(): Promise<void> {
  requireWrk();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nonsense-cards-'));
  const dbFile = path.join(dir, 'cards.db');
  const uuids = await seed(dbFile, NEW_CARDS + 60);
  const service = await startService({
    DATABASE_URL: dbFile, PORT: String(SERVICE_PORT), LOG_LEVEL: 'warn', RATE_LIMIT_READ: 'off', RATE_LIMIT_IMAGE: 'off',
  });
  const base = `http://127.0.0.1:${SERVICE_PORT}`;
  const card = (uuid: string) => `/api/v1/nonsense/${uuid}.png`;
  let bare: ChildProcess | undefined;
  const lines: string[] = [];
  // The service's resident memory, render threads included, sampled while it runs; VmHWM gives the exact peak at the end.
  const rssAtStart = memory(service.pid).rss;
  let rssPeakSampled = rssAtStart;
  const sampler = setInterval(() => {
    try {
      rssPeakSampled = Math.max(rssPeakSampled, memory(service.pid).rss);
    } catch {
      /* the service has exited */
    }
  }, 50);
  try {
    // Warm: the first cards start the worker and load its fonts.
    for (const uuid of uuids.slice(0, 5)) await timedGet(base + card(uuid));
    const metricsBefore = await (await fetch(`${base}/metrics`)).text();
    const latencies: number[] = [];
    for (const uuid of uuids.slice(5, 5 + NEW_CARDS)) latencies.push(await timedGet(base + card(uuid)));
    const metricsAfter = await (await fetch(`${base}/metrics`)).text();
    const figure = (text: string, name: string) => Number(new RegExp(`^${name} ([\\d.e+-]+)$`, 'm').exec(text)?.[1] ?? NaN);
    const renderSum = figure(metricsAfter, 'nonsense_share_image_render_seconds_sum') - figure(metricsBefore, 'nonsense_share_image_render_seconds_sum');
    const renderCount = figure(metricsAfter, 'nonsense_share_image_render_seconds_count') - figure(metricsBefore, 'nonsense_share_image_render_seconds_count');
    lines.push(
      `New cards, warm worker, one at a time (${NEW_CARDS}): request p50 ${quantile(latencies, 0.5).toFixed(1)} ms, p95 ${quantile(latencies, 0.95).toFixed(1)} ms, ` +
        `max ${Math.max(...latencies).toFixed(1)} ms; worker render mean ${((renderSum / renderCount) * 1000).toFixed(1)} ms`,
    );
    console.log(lines.at(-1));

    // Cached: the cards just drawn are in the cache.
    const cached = uuids.slice(5, 5 + Math.min(NEW_CARDS, 20)).map(card);
    const png = Buffer.from(await (await fetch(base + cached[0]!)).arrayBuffer());
    fs.writeFileSync(path.join(dir, 'card.png'), png);
    bare = await startBare(png);
    const service_ = { rps: [] as number[], p99: [] as number[], errors: 0 };
    const baseline = { rps: [] as number[], p99: [] as number[] };
    for (let round = 0; round < ROUNDS; round++) {
      const s = await measure(base, cached);
      const b = await measure(`http://127.0.0.1:${BARE_PORT}/`);
      service_.rps.push(s.rps); service_.p99.push(s.p99); service_.errors += s.errors;
      baseline.rps.push(b.rps); baseline.p99.push(b.p99);
      console.log(`cached round ${round + 1}: service ${s.rps.toFixed(0)} req/s, bare ${b.rps.toFixed(0)} req/s`);
    }
    lines.push(
      `Cached cards (${png.length} bytes, ${CONNECTIONS} connections, ${ROUNDS} × ${SECONDS} s, medians): service ${median(service_.rps).toFixed(0)} req/s ` +
        `(p99 ${median(service_.p99)} ms, ${service_.errors} errors), bare node:http ${median(baseline.rps).toFixed(0)} req/s (p99 ${median(baseline.p99)} ms), ` +
        `ratio ${(median(service_.rps) / median(baseline.rps)).toFixed(2)}`,
    );
    console.log(lines.at(-1));

    // Hostile cards, after the others: each alone, then a repeat.
    for (const { uuid, what } of HOSTILE) {
      const before = memory(service.pid).rss;
      rssPeakSampled = before;
      const first = await timedStatus(base + card(uuid));
      const peak = Math.max(rssPeakSampled, memory(service.pid).rss);
      const again = await timedStatus(base + card(uuid));
      lines.push(
        `Hostile card, ${what}: ${first.status} in ${first.ms.toFixed(0)} ms, service RSS ${before.toFixed(0)} MiB before, peak ${peak.toFixed(0)} MiB (+${(peak - before).toFixed(0)}); ` +
          `repeat ${again.status} in ${again.ms.toFixed(1)} ms`,
      );
      console.log(lines.at(-1));
    }
    const { rss, peak } = memory(service.pid);
    lines.push(`Service RSS (whole process, render threads included): ${rssAtStart.toFixed(0)} MiB at start, ${rss.toFixed(0)} MiB at the end, peak ${peak.toFixed(0)} MiB (VmHWM)`);
    console.log(lines.at(-1));
  } finally {
    clearInterval(sampler);
    await service.stop();
    bare?.kill('SIGTERM');
    fs.rmSync(dir, { recursive: true, force: true });
  }

  if (process.env.BENCH_FONT_MEMORY === 'off') {
    console.log(`\n${os.availableParallelism()} cores, Node ${process.version}\n${lines.join('\n')}`);
    return;
  }
  lines.push(
    '',
    'Memory a script\'s first cards add (heap and external memory after a full GC are exact; RSS moves with the allocator, ±10 MiB):',
    '| script | first card | warm card | heap + external gained | RSS gained | font files read |',
    '|---|---|---|---|---|---|',
  );
  for (const sample of samples.filter((s) => !['latin', 'client-variables', 'emoji'].includes(s.name))) {
    const result = await new Promise<{ rss: number; heap: number; external: number; fonts: { face: string; bytes: number }[]; first: number; warm: number }>((resolve, reject) => {
      const child = fork(import.meta.filename, ['--font-memory', sample.name], { execArgv: ['--expose-gc', '--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      child.once('message', (message) => resolve(message as never));
      child.once('exit', (code) => code !== 0 && reject(new Error(`font memory of ${sample.name}: exit ${code}`)));
    });
    const extra = result.fonts.filter((f) => f.face !== 'base');
    lines.push(
      `| ${sample.script} | ${result.first.toFixed(0)} ms | ${result.warm.toFixed(0)} ms | ${mib(result.heap + result.external)} MiB | ${mib(result.rss)} MiB | ` +
        `${extra.length === 0 ? 'none beyond Noto Sans' : extra.map((f) => `${f.face} ${mib(f.bytes)} MiB`).join(', ')} |`,
    );
    console.log(lines.at(-1));
  }
  console.log(`\n${os.availableParallelism()} cores, Node ${process.version}\n${lines.join('\n')}`);
}

function startBare(png: Buffer): Promise<ChildProcess> {
  const file = path.join(os.tmpdir(), `nonsense-bare-card-${process.pid}.png`);
  fs.writeFileSync(file, png);
  const child = fork(import.meta.filename, ['--bare', file], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve) => child.once('message', () => resolve(child)));
}

/** The baseline: a bare node:http server answering every request with the same PNG bytes and headers of the same kind. */
function bareServer(file: string): void {
  const png = fs.readFileSync(file);
  fs.rmSync(file);
  http
    .createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length, 'cache-control': 'public, max-age=86400', etag: '"0123456789abcdef0123456789abcdef"' });
      res.end(png);
    })
    .listen(BARE_PORT, '127.0.0.1', () => process.send!('ready'));
}

const flag = process.argv[2];
if (flag === '--font-memory') await fontMemory(process.argv[3]!);
else if (flag === '--bare') bareServer(process.argv[3]!);
else await main();
