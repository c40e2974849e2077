/**
 * Overload protection with @fastify/under-pressure: while the event loop is saturated (mean delay or
 * utilisation over the configured thresholds in consecutive samples, taken every 500 ms) requests
 * are refused at once with 503 problem+json and `Retry-After`, instead of queueing until every
 * client times out. Liveness (`/healthz`) and `/metrics` stay answered, so an overloaded process is
 * neither restarted by its supervisor nor invisible to monitoring.
 */
import { performance } from 'node:perf_hooks';
import underPressure from '@fastify/under-pressure';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { overloaded } from '../metrics/registry.ts';
import { METRICS_PATH } from './metrics.ts';
import { HttpProblem } from './problem.ts';

/** Seconds a refused client is asked to wait. */
export const OVERLOAD_RETRY_AFTER_S = 5;

/** How often the event loop is sampled. */
const SAMPLE_INTERVAL_MS = 500;

const EXEMPT = new Set(['/healthz', METRICS_PATH]);

/**
 * Sustained tells a saturated event loop from a single stall. One long synchronous task (the first
 * share image loading its fonts, a big JSON parse) makes one sample's mean delay huge and would
 * otherwise refuse every request for a whole sample interval; real saturation persists. Pressure
 * counts once it has been seen on requests without a gap longer than a sample interval for one and
 * a half intervals, i.e. across at least two consecutive samples.
 */
export class Sustained {
  private since = 0;
  private last = Number.NEGATIVE_INFINITY;

  constructor(private readonly intervalMs: number) {}

  /** seen records pressure observed now and tells whether it has lasted long enough to act on. */
  seen(now: number): boolean {
    if (now - this.last > this.intervalMs) this.since = now;
    this.last = now;
    return now - this.since >= this.intervalMs * 1.5;
  }
}

export default fp(
  async function overloadPlugin(app: FastifyInstance) {
    const { overloadMaxEventLoopDelayMs, overloadMaxEventLoopUtilization } = app.config;
    if (overloadMaxEventLoopDelayMs === null && overloadMaxEventLoopUtilization === null) return;
    const sustained = new Sustained(SAMPLE_INTERVAL_MS);
    await app.register(underPressure, {
      maxEventLoopDelay: overloadMaxEventLoopDelayMs ?? 0,
      maxEventLoopUtilization: overloadMaxEventLoopUtilization ?? 0,
      sampleInterval: SAMPLE_INTERVAL_MS,
      // Resolving lets the request through; rejecting sends the error through the app's error
      // handler, so the refusal is problem+json (or the OData error format under /odata).
      pressureHandler: async (request, _reply, type, value) => {
        if (EXEMPT.has(request.routeOptions.url ?? '')) return;
        if (!sustained.seen(performance.now())) return;
        overloaded.inc({ reason: type });
        request.log.warn({ reqId: request.id, type, value }, 'overloaded: request refused');
        throw new HttpProblem(503, `The service is overloaded; try again in ${OVERLOAD_RETRY_AFTER_S} s.`, {}, { 'retry-after': String(OVERLOAD_RETRY_AFTER_S) });
      },
    });
    // Under pressure, the fast lane leaves its requests to the hook above, which decides.
    app.fastLane.admit(() => !app.isUnderPressure());
  },
  { name: 'overload', dependencies: ['problem'] },
);
