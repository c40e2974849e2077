/** EntryQuery.listPages under OData orders: page by page it must give exactly what one query gives. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileFilter, compileOrderBy, type CompileContext } from '../../src/storage/odata-filter.ts';
import { parseFilter, parseOrderBy } from '../../src/domain/odata/expression.ts';
import { createTestApp, entry, type TestContext } from '../helper.ts';

const texts = ['b', 'a', 'B', 'a $AUTHOR$', 'line\nbreak', 'a', 'zz $AUTHOR$', 'c', 'b $AUTHOR$', 'same', 'same'];
// Repeated timestamps and similar texts (exact duplicates are skipped on insert), so every order has ties for uuid to break.
const entries = Array.from({ length: 66 }, (_, i) => entry(`${texts[i % texts.length]!}${i % 4 === 0 ? '' : ` ${i % 5}`}`, 1_000 + (i % 9), `cccccccc-0000-4000-8000-${String(i).padStart(12, '0')}`));

describe('EntryQuery.listPages with OData orders', () => {
  let t: TestContext;
  let context: CompileContext;
  beforeAll(async () => {
    t = await createTestApp({ entries, env: { OVERLOAD_MAX_EVENT_LOOP_DELAY: 'off' } });
    context = { quirks: t.storage.database.quirks, variableTokens: ['$AUTHOR$'] };
  });
  afterAll(() => t.close());

  it.each([
    'timestamp desc',
    'nonsense',
    'nonsense desc, timestamp',
    'original_nonsense',
    'original_nonsense desc, timestamp desc',
    'multiline desc, length(nonsense)',
    'tolower(nonsense), uuid desc',
  ])('$orderby=%s walks in pages of 4 exactly as one query reads', async (orderBy) => {
    const order = compileOrderBy(parseOrderBy(orderBy), context);
    const where = compileFilter(parseFilter("not startswith(nonsense, 'c')"), context);
    const whole = (await t.storage.entryQuery.list({ where, order })).map((e) => e.uuid);
    expect(whole.length).toBeGreaterThan(30);
    const walked: string[] = [];
    for await (const page of t.storage.entryQuery.listPages({ where, order }, 4)) walked.push(...page.map((e) => e.uuid));
    expect(walked).toEqual(whole);
    const limited: string[] = [];
    for await (const page of t.storage.entryQuery.listPages({ where, order, offset: 5, limit: 20 }, 4)) limited.push(...page.map((e) => e.uuid));
    expect(limited).toEqual(whole.slice(5, 25));
  });
});
