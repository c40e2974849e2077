/**
 * The overload plugin's sampler (src/plugins/overload.ts): it measures the event loop's delay over
 * each interval, and a sample that fails is reported, never thrown out of its timer (which would
 * end the process).
 */
import { describe, expect, it, vi } from 'vitest';
import { LoopSampler } from '../../src/plugins/overload.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the event-loop sampler', () => {
  it('sees a busy event loop as pressure, and a quiet one as none', async () => {
    const sampler = new LoopSampler(20, null, () => {});
    // Samples are taken here, not by the timer.
    sampler.start(60_000);
    try {
      await sleep(200);
      sampler.sample();
      expect(sampler.pressure()).toBeUndefined();
      // Busy for 50 ms at a time, with the shortest of breaks: every delay the loop records is long.
      const until = Date.now() + 400;
      while (Date.now() < until) {
        const chunk = Date.now() + 50;
        while (Date.now() < chunk);
        await new Promise((resolve) => setImmediate(resolve));
      }
      sampler.sample();
      expect(sampler.pressure()?.type).toBe('eventLoopDelay');
      await sleep(200);
      sampler.sample();
      expect(sampler.pressure()).toBeUndefined();
    } finally {
      sampler.stop();
    }
  });

  it('reports a failing sample and keeps sampling', async () => {
    const errors: unknown[] = [];
    const sampler = new LoopSampler(30, null, (error) => errors.push(error));
    const sample = vi.spyOn(sampler, 'sample').mockImplementation(() => {
      throw Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE' });
    });
    sampler.start(20);
    try {
      await sleep(150);
    } finally {
      sampler.stop();
    }
    expect(sample.mock.calls.length).toBeGreaterThan(2);
    expect(errors).toHaveLength(sample.mock.calls.length);
    expect(errors[0]).toMatchObject({ code: 'EMFILE' });
  });
});
