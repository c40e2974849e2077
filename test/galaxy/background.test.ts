/**
 * The galaxy's background thread: it lays out a database that has no layout, places entries added
 * afterwards within seconds while requests keep being answered, ends itself when idle and is started
 * again by new work, and stops on request (at its next pause, even in the middle of a layout).
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { galaxyBehind, GalaxyBackground } from '../../src/services/galaxy/background.ts';
import { createTestApp, entry, type TestContext } from '../helper.ts';
import { families } from './corpus.ts';

describe('the galaxy background thread', () => {
  let t: TestContext;
  let background: GalaxyBackground;
  const rounds: string[] = [];
  const texts = families(20, 8).map((f) => f.text);

  beforeAll(async () => {
    t = await createTestApp({ entries: texts.slice(0, 45).map((text) => entry(text)) });
    background = new GalaxyBackground(t.config, pino({ level: 'silent' }), { intervalMs: 200, onRound: (action) => rounds.push(action) });
    background.start();
  });
  afterAll(async () => {
    await background.stop();
    await t.close();
  });

  const uuids = async () => {
    const res = await t.app.inject('/api/v1/nonsense/galaxy?format=json');
    return res.statusCode === 200 ? res.json<{ uuid: string }[]>().map((s) => s.uuid) : [];
  };

  it('lays out the galaxy, then places new entries within seconds', async () => {
    await expect.poll(uuids, { timeout: 30_000, interval: 250 }).toHaveLength(45);
    // The thread reports its round after storing the layout, so the report may come a moment later.
    await expect.poll(() => rounds, { timeout: 5000 }).toContain('fitted');
    const added = texts.slice(45, 48).map((text) => entry(text));
    await t.storage.entries.insertEntries(added);
    const since = Date.now();
    await expect.poll(uuids, { timeout: 10_000, interval: 100 }).toEqual(expect.arrayContaining(added.map((e) => e.uuid)));
    expect(Date.now() - since).toBeLessThan(5000);
    expect(rounds).toContain('placed');
  });

  it('stops when asked', async () => {
    await background.stop();
    const count = rounds.length;
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(rounds.length).toBe(count);
  });
});

describe('the galaxy background thread during a long layout', () => {
  let t: TestContext;

  beforeAll(async () => {
    t = await createTestApp({ entries: families(800, 5).map((f) => entry(f.text)) });
  });
  afterAll(() => t.close());

  it('ends the running layout at its next pause when stopped (a shutdown does not wait for the layout)', async () => {
    const messages: string[] = [];
    const log = pino({ level: 'info' }, { write: (line: string) => messages.push((JSON.parse(line) as { msg: string }).msg) });
    // A wait long enough for any stretch without a pause on a loaded host: the thread must end by
    // itself, not by the fallback that terminates it.
    const background = new GalaxyBackground(t.config, log, { intervalMs: 200, stopWaitMs: 15_000 });
    background.start();
    await expect.poll(() => messages, { timeout: 20_000, interval: 20 }).toContain('galaxy refit started');
    await new Promise((resolve) => setTimeout(resolve, 300));
    await background.stop();
    // Cut at its next pause: the layout never finished (before, stop() waited for it), and the thread
    // ended by itself.
    expect(messages).not.toContain('galaxy refit done');
    expect(messages).not.toContain('galaxy thread did not end by itself; terminated');
    expect(messages.filter((m) => /failed/.test(m))).toEqual([]);
    // Nothing became current: the endpoint still waits for its first layout.
    expect((await t.app.inject('/api/v1/nonsense/galaxy')).statusCode).toBe(503);
  }, 40_000);
});

describe('the galaxy background thread on demand', () => {
  let t: TestContext;
  let background: GalaxyBackground;
  const texts = families(20, 9).map((f) => f.text);

  beforeAll(async () => {
    t = await createTestApp({ entries: texts.slice(0, 30).map((text) => entry(text)) });
    background = new GalaxyBackground(t.config, pino({ level: 'silent' }), { intervalMs: 100, idleExitMs: 300, needsWork: () => galaxyBehind(t.storage) });
  });
  afterAll(async () => {
    await background.stop();
    await t.close();
  });

  const served = async () => {
    const res = await t.app.inject('/api/v1/nonsense/galaxy?format=json');
    return res.statusCode === 200 ? res.json<{ uuid: string }[]>().length : 0;
  };

  it('runs while the layout is behind the entries, ends when idle, and starts again for new entries', async () => {
    background.start();
    await expect.poll(served, { timeout: 30_000, interval: 100 }).toBe(30);
    // Up to date: the thread ends, and the checks do not start it again.
    await expect.poll(() => background.running, { timeout: 10_000, interval: 50 }).toBe(false);
    expect(await galaxyBehind(t.storage)).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(background.running).toBe(false);
    // New entries: started again, and they are served within seconds.
    await t.storage.entries.insertEntries(texts.slice(30, 33).map((text) => entry(text)));
    await expect.poll(() => background.running, { timeout: 5000, interval: 20 }).toBe(true);
    await expect.poll(served, { timeout: 10_000, interval: 100 }).toBe(33);
  });
});

describe('the galaxy background thread at a server\'s start', () => {
  it('looks for work one interval after start, not at once, leaving the first requests the cores', async () => {
    const asked: number[] = [];
    const config = { galaxy: true } as unknown as ConstructorParameters<typeof GalaxyBackground>[0];
    const background = new GalaxyBackground(config, pino({ level: 'silent' }), {
      intervalMs: 400,
      needsWork: async () => {
        asked.push(performance.now());
        return false;
      },
    });
    const started = performance.now();
    background.start();
    try {
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(asked).toEqual([]);
      await expect.poll(() => asked.length, { timeout: 5000, interval: 20 }).toBeGreaterThan(0);
      // Timers may fire a millisecond early.
      expect(asked[0]! - started).toBeGreaterThanOrEqual(390);
      expect(background.running).toBe(false);
    } finally {
      await background.stop();
    }
  });
});
