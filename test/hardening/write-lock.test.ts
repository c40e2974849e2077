/**
 * SQLite writes while another process holds the write lock (`nonsense import`): they wait for it up
 * to SQLITE_BUSY_TIMEOUT without stopping anyone else, and only then answer 503 with Retry-After.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import SQLite from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestApp, entry, type TestContext } from '../helper.ts';

const one = entry('An entry to read while writers wait.', 1_700_000_000, '12345678-0000-4000-8000-0000000000d1');

describe('writes during another process\'s write transaction', () => {
  let t: TestContext;
  let other: SQLite.Database;
  afterEach(async () => {
    if (other?.inTransaction) other.exec('rollback');
    other?.close();
    await t.close();
  });

  async function setUp(timeout: string) {
    t = await createTestApp({ entries: [one], env: { SQLITE_BUSY_TIMEOUT: timeout } });
    const token = (await t.storage.tokens.create('moderator'))!;
    other = new SQLite(t.config.database.engine === 'sqlite' ? t.config.database.file : '');
    // What an import does: one transaction holding the write lock.
    other.exec('begin immediate');
    other.prepare('insert into meta (key, value) values (?, ?)').run('importing', 1);
    const write = () =>
      t.app.inject({
        method: 'POST',
        url: '/api/v1/admin/nonsense',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        payload: { text: 'Written while an import runs.' },
      });
    return write;
  }

  it('waits for the lock, and readers are served meanwhile', async () => {
    const write = (await setUp('5s'))();
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    // Time for the write to reach the lock and wait on it: nothing outside the engine shows when it does.
    await sleep(100);
    const started = performance.now();
    const read = await t.app.inject({ url: `/api/v1/nonsense/${one.uuid}` });
    expect(read.statusCode).toBe(200);
    expect(performance.now() - started).toBeLessThan(250);
    // The event loop's delay is measured over a span in which the writer keeps waiting.
    const waitingSpan = 300;
    await sleep(waitingSpan);
    other.exec('commit');
    const res = await write;
    delay.disable();
    expect(res.statusCode).toBe(201);
    expect(delay.max / 1e6).toBeLessThan(200);
  });

  it('answers 503 with Retry-After once the busy timeout has passed', async () => {
    const started = performance.now();
    const res = await (await setUp('300ms'))();
    const waited = performance.now() - started;
    expect(res.statusCode).toBe(503);
    expect(res.headers['retry-after']).toBe('5');
    expect(res.json().detail).toMatch(/database is not available/);
    expect(waited).toBeGreaterThanOrEqual(250);
    expect(waited).toBeLessThan(3000);
  });
});
