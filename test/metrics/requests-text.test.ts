/**
 * The request series' own text (src/metrics/requests.ts) against prom-client's: the same
 * observations through a prom-client Histogram and Counter must give the same samples, label values
 * escaped the same way.
 */
import client from 'prom-client';
import { describe, expect, it } from 'vitest';
import { LATENCY_BUCKETS, RequestMetrics } from '../../src/metrics/requests.ts';

/** The samples of a text, each as its name, its labels sorted by name, and its value. */
function samples(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const labels = (match[2] ?? '').split(/,(?=[a-z_]+=")/).filter(Boolean).sort();
    out.push(`${match[1]}{${labels.join(',')}} ${match[3]}`);
  }
  return out.sort();
}

describe('the request series text', () => {
  it('has the samples, HELP and TYPE lines prom-client writes for the same observations', async () => {
    const ours = new RequestMetrics(new client.Registry());
    const theirs = new client.Registry();
    const histogram = new client.Histogram({ name: 'http_request_duration_seconds', help: 'h', labelNames: ['method', 'route', 'status'], buckets: [...LATENCY_BUCKETS], registers: [theirs] });
    const counter = new client.Counter({ name: 'http_requests_total', help: 'c', labelNames: ['method', 'route', 'status'], registers: [theirs] });
    const observations: [string, string, number, number][] = [
      ['GET', '/api/v1/nonsense/:id', 200, 0.0031],
      ['GET', '/api/v1/nonsense/:id', 200, 12],
      ['GET', '/api/v1/nonsense/:id', 200, 0.001],
      ['HEAD', '/api/v1/nonsense/:id', 404, 1e-7],
      ['POST', 'unmatched', 405, 0.5],
      ['GET', 'we"ird\\route\nwith é', 200, 1 / 3],
    ];
    for (const [method, route, status, seconds] of observations) {
      ours.route(method, route).series(method, status).observe(seconds);
      histogram.observe({ method, route, status: String(status) }, seconds);
      counter.inc({ method, route, status: String(status) });
    }
    const text = ours.text();
    expect(samples(text)).toEqual(samples(await theirs.metrics()));
    expect(text).toMatch(/^# HELP http_request_duration_seconds .+\n# TYPE http_request_duration_seconds histogram\n/);
    expect(text).toMatch(/\n\n# HELP http_requests_total .+\n# TYPE http_requests_total counter\n/);
    expect(text).toContain('route="we\\"ird\\\\route\\nwith é"');
  });

  it('is empty before the first request', () => {
    expect(new RequestMetrics(new client.Registry()).text()).toBe('');
  });
});
