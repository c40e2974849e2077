import { describe, expect, it } from 'vitest';
import { createTestApp } from '../helper.ts';

describe('test engine', () => {
  it('runs on the engine the project asks for', async () => {
    const t = await createTestApp();
    try {
      expect(t.database.quirks.engine).toBe(process.env.TEST_DATABASE === 'postgres' ? 'postgres' : 'sqlite');
      // The longest allowed text, in a multi-byte script, is stored and found as a duplicate on every engine.
      const long = '日本'.repeat(1000);
      const first = await t.storage.entries.create(long, 1, 'test');
      expect('entry' in first).toBe(true);
      expect(await t.storage.entries.create(long, 2, 'test')).toEqual({ duplicateOf: 'entry' in first ? first.entry.uuid : '' });
    } finally {
      await t.close();
    }
  });
});
