/**
 * Fair share between clients: the rate limits count requests, but one export, search or OData feed
 * can cost a thousand times a random entry. Here the cost of heavy work is bounded per client address
 * (the address the rate limits use):
 *
 * - A route declared with `config: { heavy: true }` (exports, the search page, the galaxy, OData, the
 *   API reference) may have at most HEAVY_REQUESTS_PER_CLIENT requests of one address running at
 *   once; one more is answered 429 with `Retry-After` at once. A request counts from its start until
 *   its answer is sent or its connection closes, so a download read slowly counts all along.
 * - The OData reads of one address spend a budget of database time (ODATA_TIME_BUDGET, e.g. 15 s a
 *   minute): cost, not count. The time of every statement is charged, failed ones included; the
 *   budget recovers steadily over its window. A new OData request from an address whose budget is
 *   spent is answered 429 with `Retry-After` (in the OData error format); a feed already answering
 *   finishes.
 *
 * The heavy work itself is then served by client in turn (services/read-workers/fair-queue.ts), so
 * the few requests one address may run never delay another's for longer than one of their steps.
 * The counters live in this process: with several instances, each bounds what it serves.
 */
import { normalizeIP } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import type { TimeBudget } from '../config.ts';
import { heavyRefused } from '../metrics/registry.ts';
import { problemResponse } from '../schemas/api.ts';
import { HttpProblem } from '../http/problem.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route is heavy work: its requests count against the per-address limit (plugins/fair-share.ts). */
    heavy?: boolean;
  }
  interface FastifyInstance {
    fairShare: FairShare;
  }
}

/** Addresses whose spent OData time is remembered at most; the ones charged longest ago go first. */
const MAX_TRACKED_CLIENTS = 50_000;

/**
 * TimeBudgets holds how much database time each client has spent, recovering at the budget's rate
 * (a leaky bucket): a client may spend `ms` at once, and `ms` per `windowMs` in the long run.
 */
export class TimeBudgets {
  private readonly spent = new Map<string, { ms: number; at: number }>();

  constructor(
    private readonly budget: NonNullable<TimeBudget>,
    private readonly maxClients = MAX_TRACKED_CLIENTS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** owed is what `client` has spent and not yet recovered, in ms. */
  private owed(client: string, now: number): number {
    const entry = this.spent.get(client);
    if (entry === undefined) return 0;
    return Math.max(0, entry.ms - ((now - entry.at) * this.budget.ms) / this.budget.windowMs);
  }

  /**
   * retryAfterSeconds is how long `client` must wait before its next read, or 0 when it may read now;
   * never longer than the window, whatever one read cost.
   */
  retryAfterSeconds(client: string): number {
    const over = this.owed(client, this.now()) - this.budget.ms;
    if (over < 0) return 0;
    return Math.max(1, Math.ceil(Math.min(this.budget.windowMs, (over * this.budget.windowMs) / this.budget.ms) / 1000));
  }

  /** charge adds `ms` of database time to what `client` has spent. */
  charge(client: string, ms: number): void {
    const now = this.now();
    const owed = this.owed(client, now) + ms;
    this.spent.delete(client);
    if (this.spent.size >= this.maxClients) this.spent.delete(this.spent.keys().next().value!);
    this.spent.set(client, { ms: owed, at: now });
  }

  /** clients is how many clients are remembered. */
  get clients(): number {
    return this.spent.size;
  }
}

/** What the routes ask of fair sharing. */
export interface FairShare {
  /** clientOf is the key a request's work is shared by: its address, as the rate limits see it. */
  clientOf(request: FastifyRequest): string;
  /** checkODataTime refuses (429) an OData request of a client whose database time is spent. */
  checkODataTime(request: FastifyRequest): void;
  /** chargeODataTime adds the database time of one of its reads to the client's account. */
  chargeODataTime(request: FastifyRequest, ms: number): void;
}

const clientOf = (request: FastifyRequest) => normalizeIP(request.ip);

/** No sharing: every request is its own client's, and nothing is charged. */
export const UNSHARED: FairShare = { clientOf, checkODataTime: () => {}, chargeODataTime: () => {} };

export default fp(
  async function fairSharePlugin(app: FastifyInstance) {
    const { heavyRequestsPerClient: perClient, odataTimeBudget } = app.config;

    const budgets = odataTimeBudget === null ? null : new TimeBudgets(odataTimeBudget);
    app.decorate('fairShare', {
      clientOf,
      checkODataTime(request) {
        const wait = budgets?.retryAfterSeconds(clientOf(request)) ?? 0;
        if (wait === 0) return;
        heavyRefused.inc({ reason: 'odata_time' });
        throw new HttpProblem(
          429,
          `Your address has used its OData database time (${describeBudget(odataTimeBudget!)}); try again in ${wait} s, ` +
            'or ask for less: narrow $filter, for example with a timestamp range, and order by timestamp, created or uuid.',
          {},
          { 'retry-after': String(wait) },
        );
      },
      chargeODataTime(request, ms) {
        budgets?.charge(clientOf(request), ms);
      },
    } satisfies FairShare);

    if (perClient === null) return;
    const running = new Map<string, number>();
    const release = (client: string) => {
      const left = running.get(client)! - 1;
      if (left === 0) running.delete(client);
      else running.set(client, left);
    };
    const gate: onRequestHookHandler = (request, reply, done) => {
      const client = clientOf(request);
      const now = running.get(client) ?? 0;
      if (now >= perClient) {
        heavyRefused.inc({ reason: 'concurrency' });
        done(
          new HttpProblem(
            429,
            `Your address already has ${perClient} exports, searches, OData or galaxy requests running, the most it may have at once; ` +
              'try again once one has finished.',
            {},
            { 'retry-after': '1' },
          ),
        );
        return;
      }
      running.set(client, now + 1);
      // 'close' comes once the answer is sent or the connection is gone, whichever is first.
      reply.raw.once('close', () => release(client));
      done();
    };

    app.addHook('onRoute', (route) => {
      if (route.config?.heavy !== true) return;
      if (route.schema !== undefined && !route.schema.hide) {
        route.schema = { ...route.schema, response: { ...(route.schema.response as Record<string, unknown> | undefined), 429: problemResponse(429) } };
      }
      // After the rate limits (added before any route), so a request over its rate spends no place here.
      const existing = route.onRequest === undefined ? [] : ([] as onRequestHookHandler[]).concat(route.onRequest as never);
      route.onRequest = [...existing, gate];
    });
  },
  { name: 'fair-share', dependencies: ['problem'] },
);

/** describeBudget writes a time budget as people say it: "15 s a minute". */
function describeBudget({ ms, windowMs }: NonNullable<TimeBudget>): string {
  const window = windowMs % 3_600_000 === 0 ? `${windowMs / 3_600_000} h` : windowMs % 60_000 === 0 ? `${windowMs / 60_000} min` : `${windowMs / 1000} s`;
  return `${ms >= 1000 ? `${ms / 1000} s` : `${ms} ms`} per ${window}`;
}
