/** FairQueue: jobs taken from their clients in turn, within the slots, and within each client's share. */
import { describe, expect, it } from 'vitest';
import { FairQueue } from '../../src/services/read-workers/fair-queue.ts';

/** A job that runs until `finish` is called, recording when it starts. */
function gatedJob(log: string[], name: string) {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return { run: async () => (log.push(name), done), finish: () => finish() };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('FairQueue', () => {
  it('serves waiting clients in turn, not in arrival order', async () => {
    const queue = new FairQueue(1);
    const log: string[] = [];
    const jobs = ['a1', 'a2', 'a3', 'b1', 'b2', 'c1'].map((name) => ({ name, ...gatedJob(log, name) }));
    const runs = jobs.map((job) => queue.run(job.name[0]!, job.run));
    expect(queue.size).toBe(6);
    for (let i = 0; i < jobs.length; i++) {
      await settle();
      jobs.find((j) => j.name === log.at(-1))!.finish();
    }
    await Promise.all(runs);
    // a1 was running when the others came; then every client once, in the order they first waited.
    expect(log).toEqual(['a1', 'a2', 'b1', 'c1', 'a3', 'b2']);
    expect(queue.size).toBe(0);
  });

  it('runs no more than its slots, nor more of one client than its share', async () => {
    const queue = new FairQueue(2, 1);
    const log: string[] = [];
    const a1 = gatedJob(log, 'a1');
    const a2 = gatedJob(log, 'a2');
    const b1 = gatedJob(log, 'b1');
    const runs = [queue.run('a', a1.run), queue.run('a', a2.run)];
    await settle();
    // One slot is free, but a's share is one job.
    expect(log).toEqual(['a1']);
    runs.push(queue.run('b', b1.run));
    await settle();
    expect(log).toEqual(['a1', 'b1']);
    a1.finish();
    await settle();
    expect(log).toEqual(['a1', 'b1', 'a2']);
    a2.finish();
    b1.finish();
    await Promise.all(runs);
  });

  it('takes a new request before the pages that continue answers, but not forever', async () => {
    const queue = new FairQueue(1);
    const log: string[] = [];
    const started = (name: string) => jobs.find((j) => j.name === name)!;
    const jobs = ['a1', 'b2', 'c2', 'd1', 'e1', 'f1'].map((name) => ({ name, ...gatedJob(log, name) }));
    // a1 runs; b and c wait with later pages of their exports; d, e and f come with new requests.
    const runs = jobs.map((job) => queue.run(job.name[0]!, job.run, job.name.endsWith('2') ? 'later' : 'new'));
    for (let i = 0; i < jobs.length; i++) {
      await settle();
      started(log.at(-1)!).finish();
    }
    await Promise.all(runs);
    // d1 goes before the later pages waiting ahead of it in turn; then, one slot, b2 has its turn
    // before e1 does, and e1 goes before c2.
    expect(log).toEqual(['a1', 'd1', 'b2', 'e1', 'c2', 'f1']);
  });

  it('takes a first job before every other waiting one, within its client\'s share', async () => {
    const queue = new FairQueue(2, 1);
    const log: string[] = [];
    const started = (name: string) => jobs.find((j) => j.name === name)!;
    // a1 and b1 run; c waits with a later page, d with a new request; then the service draws twice (s).
    const jobs = ['a1', 'b1', 'c2', 'd1', 's1', 's2'].map((name) => ({ name, ...gatedJob(log, name) }));
    const orderOf = (name: string) => (name[0] === 's' ? 'first' : name.endsWith('2') ? 'later' : 'new');
    const runs = jobs.map((job) => queue.run(job.name[0]!, job.run, orderOf(job.name)));
    await settle();
    expect(log).toEqual(['a1', 'b1']);
    started('a1').finish();
    await settle();
    // s1 came last and goes first.
    expect(log).toEqual(['a1', 'b1', 's1']);
    started('b1').finish();
    await settle();
    // s2 is next in line but s's share (one job) is running: the turn order takes the next one.
    expect(log).toEqual(['a1', 'b1', 's1', 'd1']);
    started('s1').finish();
    await settle();
    expect(log).toEqual(['a1', 'b1', 's1', 'd1', 's2']);
    started('d1').finish();
    started('s2').finish();
    await settle();
    started('c2').finish();
    await Promise.all(runs);
    expect(log).toEqual(['a1', 'b1', 's1', 'd1', 's2', 'c2']);
  });

  it('lets first jobs past their client\'s share while no other client waits', async () => {
    const queue = new FairQueue(2, 1);
    const log: string[] = [];
    const [s1, s2, s3, a1] = ['s1', 's2', 's3', 'a1'].map((name) => gatedJob(log, name));
    const runs = [queue.run('s', s1!.run, 'first'), queue.run('s', s2!.run, 'first')];
    await settle();
    expect(log).toEqual(['s1', 's2']);
    runs.push(queue.run('a', a1!.run), queue.run('s', s3!.run, 'first'));
    s1!.finish();
    await settle();
    // Another client waits: s keeps to its share, and a takes the thread.
    expect(log).toEqual(['s1', 's2', 'a1']);
    s2!.finish();
    await settle();
    expect(log).toEqual(['s1', 's2', 'a1', 's3']);
    a1!.finish();
    s3!.finish();
    await Promise.all(runs);
  });

  it('gives the slot back when a job fails', async () => {
    const queue = new FairQueue(1);
    await expect(queue.run('a', () => Promise.reject(new Error('no')))).rejects.toThrow('no');
    expect(await queue.run('a', async () => 7)).toBe(7);
    expect(queue.size).toBe(0);
  });
});
