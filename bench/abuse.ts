/**
 * Memory under abuse: a seeded fuzz of every endpoint at a fixed rate from several clients, each
 * request from another address (X-Forwarded-For, with TRUST_PROXY=loopback) so that per-address state
 * grows as it would under a crowd or a botnet. The service otherwise runs with its default settings
 * (rate limits, caches, card renderer). Its resident memory is sampled every second; the figure is
 * the growth from the start of the fuzz to its peak, which every cache's byte budget must bound.
 * Bounded: ABUSE_SECONDS at ABUSE_RATE, 127.0.0.1 only.
 *
 *   npm run bench:abuse                      # 60 s at 1,600 req/s from 8 clients, 50,000 entries
 *   ABUSE_SECONDS=20 ABUSE_RATE=800 npm run bench:abuse
 *   ABUSE_KINDS=0,1,2 npm run bench:abuse    # only the first three kinds of request of the mix
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/database.ts';
import { loadDemo } from '../src/demo/load-demo.ts';
import { createStorage } from '../src/storage/index.ts';
import { memory, metric, seed, startService, waitForQuiet } from './lib.ts';
import { mulberry32 } from '../test/seeded-random.ts';

const SECONDS = Number(process.env.ABUSE_SECONDS ?? 60);
const RATE = Number(process.env.ABUSE_RATE ?? 1600);
const CLIENTS = Number(process.env.ABUSE_CLIENTS ?? 8);
const ENTRIES = Number(process.env.ABUSE_ENTRIES ?? 50_000);
const SEED = Number(process.env.ABUSE_SEED ?? 1806);
/** Only these kinds of request (numbers into the mix below, from 0), to find what a growth comes from. */
const KINDS = process.env.ABUSE_KINDS?.split(',').map(Number);
const PORT = '18187';

const random = mulberry32(SEED);
const int = (n: number) => Math.floor(random() * n);
const pick = <T>(items: readonly T[]): T => items[int(items.length)]!;
const junk = (max: number) => {
  const alphabet = 'abcXYZ019 -_.~%$"\'<>&;:/?#[]{}()*+=!@^|\\é漢🦆\u0000\t';
  return Array.from({ length: int(max) }, () => pick([...alphabet])).join('');
};
const token = (n: number) => Array.from({ length: int(n) }, () => String.fromCharCode(0x21 + int(94))).join('');
const hex = (n: number) => Array.from({ length: n }, () => '0123456789abcdef'[int(16)]).join('');
const fakeUuid = () => `${hex(8)}-${hex(4)}-4${hex(3)}-8${hex(3)}-${hex(12)}`;

interface Request {
  method: string;
  path: string;
  body?: string;
  headers?: Record<string, string>;
}

/**
 * The mix: every route, with valid, unknown and malformed input alike, always as well-formed HTTP (a
 * broken request line closes the connection, which the hardening tests cover; here it would only
 * stall the clients). No HEAD: autocannon waits for a body after a HEAD answer and stalls as well.
 */
function nextRequest(uuids: readonly string[], emojis: readonly string[]): Request {
  const uuid = () => (random() < 0.7 ? pick(uuids) : random() < 0.5 ? fakeUuid() : encodeURIComponent(junk(50)));
  const q = () => encodeURIComponent(junk(random() < 0.9 ? 12 : 300));
  const kinds: (() => Request)[] = [
    () => ({ method: 'GET', path: '/api/v1/nonsense/random' }),
    () => ({ method: 'GET', path: '/api/v1/nonsense/random' }),
    () => ({ method: 'GET', path: `/api/v1/nonsense/${uuid()}` }),
    () => ({ method: 'GET', path: `/api/v1/nonsense/${uuid()}` }),
    () => ({ method: 'GET', path: `/api/v1/nonsense/${uuid()}.${pick(process.env.ABUSE_NO_PNG ? ['jpg', 'webp'] : ['png', 'png', 'jpg', 'webp', 'PNG'])}` }),
    () => ({ method: 'GET', path: '/api/v1/nonsense/status' }),
    () => {
      const after = 1_600_000_000 + int(ENTRIES);
      const params = [`format=${pick(['csv', 'json', 'txt', 'xml', ''])}`, `after=${after}`, `before=${after + int(300)}`];
      if (random() < 0.5) params.push(`q=${q()}`);
      if (random() < 0.1) params.push(`after=${encodeURIComponent(junk(5))}`);
      return { method: 'GET', path: `/api/v1/nonsense?${params.join('&')}` };
    },
    () => ({ method: 'GET', path: pick(['/api/v1/variables', '/api/v1/emojis']) }),
    () => ({ method: 'GET', path: `/api/v1/emojis/${random() < 0.8 ? pick(emojis) : encodeURIComponent(junk(20))}.${pick(['png', 'gif', 'webp', 'svg'])}` }),
    () => ({
      method: 'POST',
      path: '/api/v1/nonsense/report',
      headers: { 'content-type': random() < 0.9 ? 'application/json' : 'text/plain' },
      body: random() < 0.8 ? JSON.stringify({ entryUuid: uuid(), reason: pick(['spam', 'offensive', 'other', junk(10)]), details: junk(200) }) : junk(400),
    }),
    () => ({
      method: pick(['GET', 'POST', 'PATCH', 'DELETE', 'PUT']),
      path: pick([`/api/v1/admin/nonsense/${uuid()}`, '/api/v1/admin/nonsense', '/api/v1/admin/reports', `/api/v1/admin/variables/${encodeURIComponent(junk(12))}`, '/api/v1/admin/log']),
      headers: { authorization: `Bearer ${token(40)}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text: junk(100) }),
    }),
    () => {
      const options = [`$top=${int(200)}`, `$skip=${int(ENTRIES)}`, `$format=${pick(['json', 'atom', 'xml'])}`];
      if (random() < 0.5) options.push(`$filter=${encodeURIComponent(pick([`substringof('${junk(6)}',nonsense)`, `timestamp gt ${1_600_000_000 + int(ENTRIES)}`, junk(40)]))}`);
      if (random() < 0.3) options.push(`$orderby=${encodeURIComponent(pick(['timestamp desc', 'nonsense', junk(8)]))}`);
      if (random() < 0.3) options.push('$inlinecount=allpages');
      return { method: 'GET', path: pick([`/odata/v2/nonsense_list?${options.join('&')}`, '/odata/v2/', '/odata/v2/$metadata', `/odata/v2/nonsense_list(guid'${uuid()}')`, '/odata/v2/nonsense_list/$count']) };
    },
    () => ({ method: 'GET', path: pick(['/', `/search?q=${q()}`, `/nonsense/${uuid()}`, `/nonsense/${uuid()}/report`, '/admin', '/galaxy', '/static/site.css', '/favicon.ico']) }),
    () => ({ method: 'GET', path: pick(['/healthz', '/readyz', '/metrics', '/openapi.json', '/docs', '/api/v1/nonsense/galaxy']) }),
    () => ({ method: pick(['GET', 'POST', 'DELETE']), path: `/${encodeURIComponent(junk(30))}/${encodeURIComponent(junk(10))}` }),
    () => ({
      method: 'OPTIONS',
      path: pick(['/api/v1/nonsense/random', `/api/v1/nonsense/${uuid()}`, '/api/v1/nonsense/report']),
      headers: { origin: `https://${hex(6)}.example`, 'access-control-request-method': pick(['GET', 'POST']), 'access-control-request-headers': 'content-type' },
    }),
  ];
  return pick(KINDS === undefined ? kinds : KINDS.map((k) => kinds[k]!))();
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nonsense-abuse-'));
try {
  const seeded = await seed(ENTRIES, dir);
  // A copy with the demo data on top (emojis with images, variables, multi-line texts); a kept seed stays as it is.
  const file = path.join(dir, 'abuse.db');
  fs.copyFileSync(seeded.file, file);
  const database = await openDatabase(loadConfig({ DATABASE_URL: file }).database);
  await loadDemo(createStorage(database));
  await database.close();
  const emojis = ['blobcat', 'partyparrot', 'ferris', 'thisisfine', 'catjam', 'nope'];

  const service = await startService({ DATABASE_URL: file, PORT, TRUST_PROXY: 'loopback' });
  try {
    // The mix first, so start-up allocations are not counted as growth, until the process is idle (the
    // entry cache built, the galaxy laid out); then once more, for what needed the layout (the
    // galaxy's stars held ready), and idle again.
    for (const round of ['start', 'after the layout']) {
      for (let i = 0; i < 200; i++) {
        const request = nextRequest(seeded.sample, emojis);
        try {
          await (await fetch(`${service.url}${request.path}`, { method: request.method, headers: request.headers, body: request.method === 'GET' || request.method === 'HEAD' ? undefined : request.body })).arrayBuffer();
        } catch {
          // A request fetch itself refuses to send (a path it cannot encode) warms nothing up.
        }
      }
      await (await fetch(`${service.url}/api/v1/nonsense/galaxy`)).arrayBuffer();
      if ((await waitForQuiet(service.pid)) === null) console.log(`the service was still busy after the warm-up round (${round}): the galaxy thread?`);
    }
    const start = memory(service.pid);
    console.log(`fuzz: ${RATE} req/s from ${CLIENTS} clients for ${SECONDS} s, seed ${SEED}; RSS at the start ${start.rss.toFixed(0)} MiB`);
    const samples: number[] = [];
    const sampler = setInterval(() => {
      const now = memory(service.pid);
      samples.push(now.rss);
      if (samples.length % 10 === 0) console.log(`  ${samples.length} s: RSS ${now.rss.toFixed(0)} MiB (anon ${now.anon.toFixed(0)})`);
    }, 1000);
    let addresses = 0;
    const result = await autocannon({
      url: service.url,
      connections: CLIENTS,
      overallRate: RATE,
      duration: SECONDS,
      timeout: 10,
      requests: [
        {
          setupRequest: (request) => {
            const next = nextRequest(seeded.sample, emojis);
            // A new address for most requests: 10.x.y.z, a few hundred thousand of them.
            const address = `10.${int(8)}.${int(256)}.${int(256)}`;
            addresses++;
            return {
              ...request,
              method: next.method as 'GET',
              path: next.path,
              headers: { ...next.headers, 'x-forwarded-for': address },
              body: next.method === 'GET' || next.method === 'HEAD' ? undefined : next.body,
            };
          },
        },
      ],
    });
    clearInterval(sampler);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const end = memory(service.pid);
    const peak = Math.max(...samples, end.rss);
    const codes = Object.entries(result.statusCodeStats as Record<string, { count: number }>).map(([code, s]) => `${code}: ${s.count}`).join(', ');
    if (process.env.ABUSE_SNAPSHOT) {
      service.child.kill('SIGUSR2');
      await new Promise((resolve) => setTimeout(resolve, 15000));
    }
    const caches = await Promise.all(
      ['entry_snapshot', 'rate_limits', 'galaxy'].map(async (name) => `${name} ${(((await metric(service.url, `nonsense_cache_bytes{cache="${name}"}`)) ?? 0) / 2 ** 20).toFixed(1)} MiB`),
    );
    const cards = ((await metric(service.url, 'nonsense_share_image_cache_bytes')) ?? 0) / 2 ** 20;
    const heap = ((await metric(service.url, 'nodejs_heap_size_used_bytes')) ?? 0) / 2 ** 20;
    const heapTotal = ((await metric(service.url, 'nodejs_heap_size_total_bytes')) ?? 0) / 2 ** 20;
    const external = ((await metric(service.url, 'nodejs_external_memory_bytes')) ?? 0) / 2 ** 20;
    console.log(`main thread at the end: heap used ${heap.toFixed(0)} MiB of ${heapTotal.toFixed(0)} MiB, external ${external.toFixed(0)} MiB; threads ${fs.readdirSync(`/proc/${service.pid}/task`).length}`);
    console.log(`\n${result.requests.total} requests (${result.requests.average.toFixed(0)} req/s), ${addresses} addresses drawn; status codes ${codes}; errors ${result.errors}, timeouts ${result.timeouts}`);
    console.log(`caches at the end: ${caches.join(', ')}, cards ${cards.toFixed(1)} MiB`);
    console.log('| fuzz | RSS at the start | peak | end (2 s later) | growth to the peak |');
    console.log('|---|---|---|---|---|');
    console.log(`| ${SECONDS} s, ${RATE} req/s, ${CLIENTS} clients, seed ${SEED} | ${start.rss.toFixed(0)} MiB | ${peak.toFixed(0)} MiB | ${end.rss.toFixed(0)} MiB | **+${(peak - start.rss).toFixed(0)} MiB** |`);
    if (result.statusCodeStats && Object.keys(result.statusCodeStats).some((code) => code === '500')) process.exitCode = 1;
  } finally {
    await service.stop();
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
