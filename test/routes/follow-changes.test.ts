/**
 * docs/examples/follow_changes.py, the documented way to keep a copy, run with python3 against a
 * service whose entries are created, edited, hidden and restored meanwhile: its copy ends equal to a
 * fresh JSON export.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, entry, type TestContext } from '../helper.ts';
import { skipWithout } from '../requirements.ts';

const SCRIPT = path.resolve('docs/examples/follow_changes.py');
const SKIP = skipWithout('python3', spawnSync('python3', ['--version']).status === 0, 'apt-get install python3');

interface Copy {
  revision: number;
  entries: Record<string, { text: string; timestamp: number }>;
}

describe.skipIf(SKIP)('a copy kept by follow_changes.py', () => {
  let t: TestContext;
  let url: string;
  let auth: Record<string, string>;

  beforeAll(async () => {
    t = await createTestApp({
      variables: [{ name: '$ANIMAL$', description: 'An animal.', values: ['cat', 'goose'] }],
      entries: Array.from({ length: 300 }, (_, i) => entry(`Entry number ${i}${i % 7 === 0 ? ' with a $ANIMAL$' : ''}.`, 1_700_000_000 + i, `abababab-0000-4000-8000-${String(i).padStart(12, '0')}`)),
    });
    auth = { authorization: `Bearer ${(await t.storage.tokens.create('copyist'))!}` };
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    url = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  });
  afterAll(() => t.close());

  it('ends equal to a fresh JSON export while entries change meanwhile', async () => {
    const file = path.join(t.dir, 'copy.json');
    const follower = spawn('python3', [SCRIPT, url, file, '--follow', '--interval', '0.2'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let errors = '';
    follower.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
    try {
      const uuids = Array.from({ length: 300 }, (_, i) => `abababab-0000-4000-8000-${String(i).padStart(12, '0')}`);
      const hidden = new Set<string>();
      // Entries change until the follower has caught up twice meanwhile: its copy (none yet: -1) took
      // a first revision and two more.
      const revisionsSeen = new Set<number>();
      const copied = () => (fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as Copy).revision : -1);
      const deadline = performance.now() + 30_000;
      let n = 0;
      while (revisionsSeen.size < 4) {
        if (performance.now() > deadline) throw new Error(`the follower's copy showed only ${revisionsSeen.size} of 4 revisions (-1 for none) in 30 s:\n${errors}`);
        const uuid = uuids[(n * 37) % uuids.length]!;
        const step = n % 4;
        const res =
          step === 0 ? await t.app.inject({ method: 'POST', url: '/api/v1/admin/nonsense', headers: auth, payload: { text: `Created meanwhile, number ${n}, by a $ANIMAL$.` } })
          : step === 1 && !hidden.has(uuid) ? await t.app.inject({ method: 'PATCH', url: `/api/v1/admin/nonsense/${uuid}`, headers: auth, payload: { text: `Edited meanwhile, number ${n}.` } })
          : step === 2 ? await t.app.inject({ method: 'PATCH', url: `/api/v1/admin/nonsense/${uuid}`, headers: auth, payload: { state: hidden.has(uuid) ? 'visible' : 'hidden' } })
          : null;
        if (res !== null) expect(res.statusCode).toBeLessThan(300);
        if (res !== null && step === 0) uuids.push(res.json().uuid);
        if (step === 2) {
          if (hidden.has(uuid)) hidden.delete(uuid);
          else hidden.add(uuid);
        }
        if (step === 3) revisionsSeen.add(copied());
        n++;
      }
      expect(hidden.size).toBeGreaterThan(0);
      const { revision } = (await t.app.inject('/api/v1/nonsense/status')).json();
      await expect.poll(copied, { timeout: 15_000, interval: 100 }).toBe(revision);
      const copy = JSON.parse(fs.readFileSync(file, 'utf8')) as Copy;
      const exported = (await t.app.inject('/api/v1/nonsense?format=json')).json() as { uuid: string; nonsense: string; original_nonsense?: string; timestamp: number }[];
      const expected = Object.fromEntries(exported.map((e) => [e.uuid, { text: e.original_nonsense ?? e.nonsense, timestamp: e.timestamp }]));
      expect(Object.keys(copy.entries).length).toBe(exported.length);
      expect(copy.entries).toEqual(expected);
      for (const uuid of hidden) expect(copy.entries[uuid]).toBeUndefined();
      expect(errors).toBe('');
    } finally {
      follower.kill();
    }
  }, 60_000);
});
