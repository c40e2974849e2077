/**
 * Schemas compile on first use (src/runtime/compile-later.ts): Fastify's start leaves them to their
 * first request, a request compiles what it needs and is checked by it, and the rest compile in the
 * background. Fails when Fastify calls the compilers' results at start, or not before a request.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compilePendingSchemas, pendingSchemas } from '../../src/runtime/compile-later.ts';
import { createTestApp, type TestContext } from '../helper.ts';

describe('schemas compiled on first use', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({});
  });
  afterAll(() => t.close());

  it('the start leaves them; a request compiles its own and is checked by it; the rest compile later', async () => {
    const declared = pendingSchemas();
    expect(declared).toBeGreaterThan(20);
    const refused = await t.app.inject('/api/v1/nonsense?format=tsv');
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toMatchObject({ detail: 'The parameter "format" must be one of: csv, json, txt; got "tsv".' });
    const left = pendingSchemas();
    expect(left).toBeLessThan(declared);
    expect(left).toBeGreaterThan(0);
    await compilePendingSchemas();
    expect(pendingSchemas()).toBe(0);
    expect((await t.app.inject('/api/v1/nonsense/status')).statusCode).toBe(200);
  });
});
