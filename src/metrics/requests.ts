/**
 * The per-request figures: latency histogram and request count by method, route pattern and status,
 * and the requests in flight. Written for the hot path: a series is bound to its labels once, and
 * observing a request is a bucket search and three additions, with no label hashing and no
 * allocation (prom-client's labelled `observe` hashes the label set on every call, which cost a few
 * per cent of a fast request).
 *
 * The two families render their own text, in the format prom-client writes for a histogram and a
 * counter: each series keeps its sample names and labels written out once, so a scrape is one string
 * per sample. Through prom-client's registry a scrape built a label object, two arrays and several
 * strings per sample (sixteen samples a series): most of a scrape's time, in one stretch of the event
 * loop, and most of what scrapes under load left for V8's old generation (`npm run bench:metrics`).
 */
import client, { type Registry } from 'prom-client';

/** Upper bounds of the latency buckets, in seconds. */
export const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

const DURATION = 'http_request_duration_seconds';
const TOTAL = 'http_requests_total';

/** The text of a label value in the Prometheus format: backslash, double quote and newline escaped. */
function labelValue(value: string): string {
  return value.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));
}

/** The text of a sample value as prom-client writes it. */
function sampleValue(value: number): string {
  if (Number.isNaN(value)) return 'Nan';
  if (!Number.isFinite(value)) return value < 0 ? '-Inf' : '+Inf';
  return `${value}`;
}

/** One label set: its latency buckets (not cumulative), their sum and count. */
export class RequestSeries {
  readonly buckets = new Float64Array(LATENCY_BUCKETS.length + 1);
  sum = 0;
  count = 0;
  /** Each sample's name and labels up to its value, written once: the buckets (`+Inf` last), sum, count, total. */
  private readonly prefixes: string[];

  constructor(readonly labels: { readonly method: string; readonly route: string; readonly status: string }) {
    const text = `method="${labelValue(labels.method)}",route="${labelValue(labels.route)}",status="${labelValue(labels.status)}"`;
    this.prefixes = [
      ...[...LATENCY_BUCKETS, '+Inf'].map((le) => `${DURATION}_bucket{le="${le}",${text}} `),
      `${DURATION}_sum{${text}} `,
      `${DURATION}_count{${text}} `,
      `${TOTAL}{${text}} `,
    ];
  }

  /** observe records one request that took `seconds`. */
  observe(seconds: number): void {
    let i = 0;
    while (i < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[i]!) i++;
    this.buckets[i]!++;
    this.sum += seconds;
    this.count++;
  }

  /** histogram adds this series' histogram samples (cumulative buckets, sum, count) to `lines`. */
  histogram(lines: string[]): void {
    const { prefixes } = this;
    let cumulative = 0;
    for (let i = 0; i < LATENCY_BUCKETS.length; i++) {
      cumulative += this.buckets[i]!;
      lines.push(prefixes[i]! + cumulative);
    }
    lines.push(prefixes[LATENCY_BUCKETS.length]! + this.count);
    lines.push(prefixes[LATENCY_BUCKETS.length + 1]! + sampleValue(this.sum));
    lines.push(prefixes[LATENCY_BUCKETS.length + 2]! + this.count);
  }

  /** total is this series' sample of the request counter. */
  total(): string {
    return this.prefixes[LATENCY_BUCKETS.length + 3]! + this.count;
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
    // The gauge's collect callback gets the gauge as `this`; it reads the count through this name.
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const metrics = this;
    new client.Gauge({
      name: 'http_requests_in_flight',
      help: 'Requests received and not yet answered.',
      registers: [registry],
      collect() {
        this.set(metrics.inFlight);
      },
    });
  }

  /**
   * text is the two families of the request series in the Prometheus text format, each with its
   * HELP and TYPE lines, as a block to join with the registry's (blocks are separated by an empty
   * line); empty while no request has been answered.
   */
  text(): string {
    if (this.all.size === 0) return '';
    const lines = [
      `# HELP ${DURATION} Time from receiving a request to finishing its response, by method, route pattern and status.`,
      `# TYPE ${DURATION} histogram`,
    ];
    for (const series of this.all.values()) series.histogram(lines);
    lines.push('', `# HELP ${TOTAL} Requests answered, by method, route pattern and status.`, `# TYPE ${TOTAL} counter`);
    for (const series of this.all.values()) lines.push(series.total());
    return lines.join('\n');
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
