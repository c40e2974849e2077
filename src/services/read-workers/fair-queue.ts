/**
 * FairQueue runs jobs a few at a time, taking the waiting ones from their clients in turn instead of
 * in arrival order: a client with fifty jobs waiting delays another client's next job by one of its
 * own, not by fifty. Each client has at most `perClient` jobs running at once, so that one client can
 * never hold every slot while others wait.
 */
export class FairQueue {
  /** Waiting jobs by client, each client's in arrival order; a client is here while it has any. */
  private readonly waiting = new Map<string, (() => void)[]>();
  /** Running jobs by client. */
  private readonly running = new Map<string, number>();
  private active = 0;
  private queued = 0;

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

  /** run runs `job` for `client` once its turn comes, and settles as the job does. */
  async run<T>(client: string, job: () => Promise<T>): Promise<T> {
    await new Promise<void>((start) => {
      const jobs = this.waiting.get(client);
      if (jobs === undefined) this.waiting.set(client, [start]);
      else jobs.push(start);
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
   * dispatch starts waiting jobs while slots are free: the first client in turn that may run one
   * more. A client served goes to the back of the turn (a Map keeps insertion order).
   */
  private dispatch(): void {
    while (this.active < this.slots) {
      let chosen: string | undefined;
      for (const client of this.waiting.keys()) {
        if ((this.running.get(client) ?? 0) < this.perClient) {
          chosen = client;
          break;
        }
      }
      if (chosen === undefined) return;
      const jobs = this.waiting.get(chosen)!;
      const start = jobs.shift()!;
      this.waiting.delete(chosen);
      if (jobs.length > 0) this.waiting.set(chosen, jobs);
      this.queued--;
      this.active++;
      this.running.set(chosen, (this.running.get(chosen) ?? 0) + 1);
      start();
    }
  }
}
