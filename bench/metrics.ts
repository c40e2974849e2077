/**
 * The cost of a `/metrics` scrape's request series: the service's own text (src/metrics/requests.ts)
 * against prom-client's Histogram and Counter holding the same observations, in the same run, for
 * a few sizes of the label space (a route pattern, method and status per series; the abuse fuzz
 * makes about 60). In process, no HTTP: what is measured is the text alone.
 *
 *   npm run bench:metrics
 *   METRICS_SERIES=60,400 METRICS_SCRAPES=300 npm run bench:metrics
 */
import client from 'prom-client';
import { LATENCY_BUCKETS, RequestMetrics } from '../src/metrics/requests.ts';

const SIZES = (process.env.METRICS_SERIES ?? '60,400').split(',').map(Number);
const SCRAPES = Number(process.env.METRICS_SCRAPES ?? 300);
const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'];
const STATUSES = [200, 400, 404, 405];

async function time(scrape: () => Promise<string> | string): Promise<{ ms: number; bytes: number }> {
  let bytes = 0;
  for (let i = 0; i < 50; i++) bytes = (await scrape()).length; // warm-up
  const started = performance.now();
  for (let i = 0; i < SCRAPES; i++) await scrape();
  return { ms: (performance.now() - started) / SCRAPES, bytes };
}

console.log('| series | prom-client, ms a scrape | ours, ms a scrape | ours / prom-client | text |');
console.log('|---|---|---|---|---|');
for (const size of SIZES) {
  const ours = new RequestMetrics(new client.Registry());
  const registry = new client.Registry();
  const labelNames = ['method', 'route', 'status'] as const;
  const histogram = new client.Histogram({ name: 'http_request_duration_seconds', help: 'h', labelNames, buckets: [...LATENCY_BUCKETS], registers: [registry] });
  const counter = new client.Counter({ name: 'http_requests_total', help: 'c', labelNames, registers: [registry] });
  for (let i = 0; i < size; i++) {
    const method = METHODS[i % METHODS.length]!;
    const status = STATUSES[Math.floor(i / METHODS.length) % STATUSES.length]!;
    const route = `/api/v1/route-${Math.floor(i / (METHODS.length * STATUSES.length))}/:id`;
    for (const seconds of [0.0004, 0.003, 0.02, 0.7]) {
      ours.route(method, route).series(method, status).observe(seconds);
      histogram.observe({ method, route, status: String(status) }, seconds);
      counter.inc({ method, route, status: String(status) });
    }
  }
  // Alternately, so that a noisy neighbour hits both.
  const theirs = await time(() => registry.metrics());
  const own = await time(() => ours.text());
  const theirs2 = await time(() => registry.metrics());
  const own2 = await time(() => ours.text());
  const a = (theirs.ms + theirs2.ms) / 2;
  const b = (own.ms + own2.ms) / 2;
  console.log(`| ${size} | ${a.toFixed(2)} | ${b.toFixed(3)} | ${(b / a).toFixed(3)} | ${(own.bytes / 1024).toFixed(0)} KiB |`);
}
