/** Where a waiting job stands: `first` before all, `new` (a request's own job) before `later` (continuing an answer). */
export type JobOrder = 'first' | 'new' | 'later';

/**
 * FairQueue runs jobs a few at a time, taking the waiting ones from their clients in turn instead of
 * in arrival order: a client with fifty jobs waiting delays another client's next job by one of its
 * own, not by fifty. Each client has at most `perClient` jobs running at once, so that one client can
 * never hold every slot while others wait.
 *
 * A job that continues work already answering (the later pages of an export or of an OData walk) is
 * `later`: a new request's job (a search page, an export's first page) goes before it, whatever the
 * turn, so that a search waits for the jobs running, not also for the pages of every export ahead of
 * it. So that a stream of new requests cannot hold the files being sent still, a later job waits for
 * at most `slots` new ones taken past it; then the turn order takes over again.
 *
 * A `first` job goes before every other waiting one, within its client's share, or past it while no
 * other client waits: work that requests are already waiting for and that serves many at once (a
 * batch of random picks drawn ahead), short by construction, so that those requests wait for the
 * jobs running only, and two such jobs read at once from a cold disk when nothing else is asked.
 */
export class FairQueue {
  /** Waiting jobs by client, each client's in arrival order; a client is here while it has any. */
  private readonly waiting = new Map<string, { start: () => void; order: JobOrder }[]>();
  /** Running jobs by client. */
  private readonly running = new Map<string, number>();
  private active = 0;
  private queued = 0;
  /** New jobs taken past a waiting later one since the turn order last had its way. */
  private passed = 0;

  constructor(
    /** Jobs that run at once in all. */
    private readonly slots: number,
    /** Jobs of one client that run at once. */
    private readonly perClient: number = slots,
  ) {}

  /** size is the number of jobs waiting or running. */
  get size(): number {
    return this.queued + this.active;
  }

  /** run runs `job` for `client` once its turn comes (`order`, see the class comment), and settles as the job does. */
  async run<T>(client: string, job: () => Promise<T>, order: JobOrder = 'new'): Promise<T> {
    await new Promise<void>((start) => {
      const jobs = this.waiting.get(client);
      if (jobs === undefined) this.waiting.set(client, [{ start, order }]);
      else jobs.push({ start, order });
      this.queued++;
      this.dispatch();
    });
    try {
      return await job();
    } finally {
      this.active--;
      const left = this.running.get(client)! - 1;
      if (left === 0) this.running.delete(client);
      else this.running.set(client, left);
      this.dispatch();
    }
  }

  /**
   * dispatch starts waiting jobs while slots are free: a client whose next job is `first` and that
   * may run one more (or go past its share, as the class comment says); else the first client in
   * turn that may run one more and whose next job is new; else the first in turn that may run one.
   * A client served goes to the back of the turn (a Map keeps insertion order).
   */
  private dispatch(): void {
    while (this.active < this.slots) {
      let chosen: string | undefined;
      let fresh: string | undefined;
      let first: string | undefined;
      for (const [client, jobs] of this.waiting) {
        const { order } = jobs[0]!;
        // A first job may go past its client's share while no other client waits.
        if ((this.running.get(client) ?? 0) >= this.perClient && (order !== 'first' || this.waiting.size > 1)) continue;
        chosen ??= client;
        if (order === 'first') {
          first = client;
          break;
        }
        if (order === 'new') fresh ??= client;
      }
      if (chosen === undefined) return;
      if (first !== undefined) chosen = first;
      else if (fresh !== undefined && fresh !== chosen && this.passed < this.slots) {
        this.passed++;
        chosen = fresh;
      } else if (fresh !== chosen) this.passed = 0;
      const jobs = this.waiting.get(chosen)!;
      const { start } = jobs.shift()!;
      this.waiting.delete(chosen);
      if (jobs.length > 0) this.waiting.set(chosen, jobs);
      this.queued--;
      this.active++;
      this.running.set(chosen, (this.running.get(chosen) ?? 0) + 1);
      start();
    }
  }
}
