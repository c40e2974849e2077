/**
 * Overload protection: while the event loop is saturated (mean delay or utilisation over the
 * configured thresholds in consecutive samples, taken every 500 ms) requests are refused at once with
 * 503 problem+json and `Retry-After`, instead of queueing until every client times out. Liveness
 * (`/healthz`) and `/metrics` stay answered, so an overloaded process is neither restarted by its
 * supervisor nor invisible to monitoring.
 *
 * Not @fastify/under-pressure: its timer also reads the process's memory figures at every sample,
 * whether or not a memory threshold is set, and that read opens a file, so with every file
 * descriptor taken it threw out of the timer and ended the process. The event loop's figures need
 * no file, and the sampler here catches whatever it meets, so overload protection cannot end the
 * process it protects.
 */
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { overloaded } from '../metrics/registry.ts';
import { METRICS_PATH } from './metrics.ts';
import { HttpProblem } from '../http/problem.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** Whether the last sample of the event loop was over a threshold (a single stall counts here; see Sustained). */
    isUnderPressure(): boolean;
  }
}

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

/** The histogram's resolution (ms), which its mean always includes. */
const RESOLUTION_MS = 10;

type Pressure = 'eventLoopDelay' | 'eventLoopUtilization';

/** LoopSampler keeps the event loop's mean delay and utilisation over the last sample interval. */
export class LoopSampler {
  private readonly histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  private elu = performance.eventLoopUtilization();
  private timer: NodeJS.Timeout | undefined;
  /** Mean delay (ms) beyond the resolution; Infinity when the loop was blocked for the whole interval. */
  delayMs = 0;
  utilization = 0;

  constructor(
    private readonly maxDelayMs: number | null,
    private readonly maxUtilization: number | null,
    private readonly onError: (error: unknown) => void,
  ) {}

  start(intervalMs: number): void {
    this.histogram.enable();
    this.timer = setInterval(() => {
      try {
        this.sample();
      } catch (error) {
        // A missed sample keeps the last figures; the timer must never throw.
        this.onError(error);
      }
    }, intervalMs).unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.histogram.disable();
  }

  sample(): void {
    const mean = this.histogram.mean / 1e6;
    // No delay recorded in a whole interval means the loop never got to record one.
    this.delayMs = Number.isNaN(mean) ? Infinity : Math.max(0, mean - RESOLUTION_MS);
    this.histogram.reset();
    const now = performance.eventLoopUtilization();
    this.utilization = performance.eventLoopUtilization(now, this.elu).utilization;
    this.elu = now;
  }

  /** pressure is the threshold the last sample is over, if any. */
  pressure(): { type: Pressure; value: number } | undefined {
    if (this.maxDelayMs !== null && this.delayMs > this.maxDelayMs) return { type: 'eventLoopDelay', value: this.delayMs };
    if (this.maxUtilization !== null && this.utilization > this.maxUtilization) return { type: 'eventLoopUtilization', value: this.utilization };
    return undefined;
  }
}

export default fp(
  async function overloadPlugin(app: FastifyInstance) {
    const { overloadMaxEventLoopDelayMs, overloadMaxEventLoopUtilization } = app.config;
    if (overloadMaxEventLoopDelayMs === null && overloadMaxEventLoopUtilization === null) return;
    const sustained = new Sustained(SAMPLE_INTERVAL_MS);
    const sampler = new LoopSampler(overloadMaxEventLoopDelayMs, overloadMaxEventLoopUtilization, (error) =>
      app.log.error({ err: error }, 'overload: the event loop could not be sampled'),
    );
    sampler.start(SAMPLE_INTERVAL_MS);
    app.addHook('onClose', (_app, done) => {
      sampler.stop();
      done();
    });
    app.decorate('isUnderPressure', () => sampler.pressure() !== undefined);
    // A callback hook: cheaper than an async one on the hot path. The refusal goes through the app's
    // error handler, so it is problem+json (or the OData error format under /odata).
    app.addHook('onRequest', app.fastLane.mirrors('overload', (request, _reply, done) => {
      const pressure = sampler.pressure();
      if (pressure === undefined || EXEMPT.has(request.routeOptions.url ?? '') || !sustained.seen(performance.now())) {
        done();
        return;
      }
      overloaded.inc({ reason: pressure.type });
      request.log.warn({ reqId: request.id, type: pressure.type, value: pressure.value }, 'overloaded: request refused');
      done(new HttpProblem(503, `The service is overloaded; try again in ${OVERLOAD_RETRY_AFTER_S} s.`, {}, { 'retry-after': String(OVERLOAD_RETRY_AFTER_S) }));
    }));
    // Under pressure, the fast lane leaves its requests to the hook above, which decides.
    app.fastLane.admit(() => !app.isUnderPressure());
  },
  { name: 'overload', dependencies: ['problem'] },
);
