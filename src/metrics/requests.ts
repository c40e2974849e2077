/**
 * The per-request figures: latency histogram and request count by method, route pattern and status,
 * and the requests in flight. Written for the hot path: a series is bound to its labels once, and
 * observing a request is a bucket search and three additions, with no label hashing and no
 * allocation (prom-client's labelled `observe` hashes the label set on every call, which cost a few
 * per cent of a fast request). The registry renders these series in the same text format as
 * prom-client's own histogram and counter.
 */
import client, { type Registry } from 'prom-client';

/** Upper bounds of the latency buckets, in seconds. */
export const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

/** One label set: its latency buckets (not cumulative), their sum and count. */
export class RequestSeries {
  readonly buckets = new Float64Array(LATENCY_BUCKETS.length + 1);
  sum = 0;
  count = 0;

  constructor(readonly labels: { readonly method: string; readonly route: string; readonly status: string }) {}

  /** observe records one request that took `seconds`. */
  observe(seconds: number): void {
    let i = 0;
    while (i < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[i]!) i++;
    this.buckets[i]!++;
    this.sum += seconds;
    this.count++;
  }
}

/**
 * RouteSeries holds the series of one route pattern, by method and status. A route answers with few
 * distinct statuses, so the lookup is an array index after the first request of each.
 */
export class RouteSeries {
  private readonly byStatus: (RequestSeries | undefined)[] = [];
  private readonly otherMethods = new Map<string, RouteSeries>();

  constructor(
    private readonly metrics: RequestMetrics,
    readonly method: string,
    readonly route: string,
  ) {}

  /** series returns the series for a response of this route with `method` and `status`. */
  series(method: string, status: number): RequestSeries {
    if (method !== this.method) {
      // A HEAD served by a GET route, or a route that takes several methods.
      let other = this.otherMethods.get(method);
      if (other === undefined) {
        other = this.metrics.route(method, this.route);
        this.otherMethods.set(method, other);
      }
      return other.series(method, status);
    }
    let found = this.byStatus[status];
    if (found === undefined) {
      found = this.metrics.series(method, this.route, status);
      this.byStatus[status] = found;
    }
    return found;
  }
}

/** RequestMetrics is the set of request series of a process, rendered into a prom-client registry. */
export class RequestMetrics {
  /** Requests received and not yet answered (or abandoned). */
  inFlight = 0;
  private readonly all = new Map<string, RequestSeries>();
  private readonly routes = new Map<string, RouteSeries>();

  constructor(registry: Registry) {
    // The collect callbacks below get the metric as `this`; they read the series through this name.
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const metrics = this;
    const durationName = 'http_request_duration_seconds';
    registry.registerMetric(
      customMetric(durationName, 'Time from receiving a request to finishing its response, by method, route pattern and status.', 'histogram', () => {
        const values: MetricValue[] = [];
        for (const series of metrics.all.values()) {
          let cumulative = 0;
          for (let i = 0; i < LATENCY_BUCKETS.length; i++) {
            cumulative += series.buckets[i]!;
            values.push({ metricName: `${durationName}_bucket`, labels: { le: LATENCY_BUCKETS[i]!, ...series.labels }, value: cumulative });
          }
          values.push({ metricName: `${durationName}_bucket`, labels: { le: '+Inf', ...series.labels }, value: series.count });
          values.push({ metricName: `${durationName}_sum`, labels: { ...series.labels }, value: series.sum });
          values.push({ metricName: `${durationName}_count`, labels: { ...series.labels }, value: series.count });
        }
        return values;
      }),
    );
    registry.registerMetric(
      customMetric('http_requests_total', 'Requests answered, by method, route pattern and status.', 'counter', () =>
        [...metrics.all.values()].map((series) => ({ labels: { ...series.labels }, value: series.count })),
      ),
    );
    new client.Gauge({
      name: 'http_requests_in_flight',
      help: 'Requests received and not yet answered.',
      registers: [registry],
      collect() {
        this.set(metrics.inFlight);
      },
    });
  }

  /** route returns the bound series of a route pattern for one method. */
  route(method: string, route: string): RouteSeries {
    const key = `${method} ${route}`;
    let found = this.routes.get(key);
    if (found === undefined) {
      found = new RouteSeries(this, method, route);
      this.routes.set(key, found);
    }
    return found;
  }

  /** series returns the series of one label set, creating it on first use. */
  series(method: string, route: string, status: number): RequestSeries {
    const key = `${method} ${status} ${route}`;
    let found = this.all.get(key);
    if (found === undefined) {
      found = new RequestSeries({ method, route, status: String(status) });
      this.all.set(key, found);
    }
    return found;
  }
}

interface MetricValue {
  metricName?: string;
  labels: Record<string, string | number>;
  value: number;
}

/** customMetric is a metric that prom-client's registry renders from values computed at scrape time. */
function customMetric(name: string, help: string, type: 'histogram' | 'counter', values: () => MetricValue[]) {
  return {
    name,
    help,
    type,
    aggregator: 'sum' as const,
    get: async () => ({ name, help, type, aggregator: 'sum' as const, values: values() }),
    reset: () => {},
  } as unknown as client.Metric;
}
