/**
 * Three projects: the unit tests that touch no database, once; every other test on the embedded
 * SQLite; and every test that goes through storage or HTTP again on PostgreSQL (TEST_DATABASE=postgres;
 * each test file gets its own database). When no PostgreSQL server answers, the third project is left
 * out and the run says so; under CI=true that fails the run instead, so a green CI has run everything.
 */
import os from 'node:os';
import pg from 'pg';
import { defineConfig } from 'vitest/config';

const POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
/** Parsers, serialisers and rules: no database, no engine to repeat them on. */
const UNIT = ['test/domain/**/*.test.ts', 'test/lib/**/*.test.ts', 'test/formats/**/*.test.ts', 'test/config.test.ts', 'test/odata/expression.test.ts', 'test/odata/xml.test.ts'];
const ON_BOTH_ENGINES = ['test/routes/**/*.test.ts', 'test/storage/**/*.test.ts', 'test/import/**/*.test.ts', 'test/odata/**/*.test.ts', 'test/fuzz/**/*.test.ts', 'test/hardening/query-plans.test.ts'];

/**
 * Tests that time the event loop (its largest delay while heavy work runs). Beside other test files
 * on a small host, the process is starved for hundreds of milliseconds at a time and the delay they
 * measure is the machine's, not the service's: `npm test` runs them afterwards, one file at a time
 * (TEST_PHASE=timing).
 */
const TIMING = ['test/hardening/stall.test.ts', 'test/hardening/write-lock.test.ts', 'test/odata/stream.test.ts'];
const TIMING_ON_BOTH_ENGINES = ['test/odata/stream.test.ts'];
const timingPhase = process.env.TEST_PHASE === 'timing';

async function postgresAnswers(): Promise<boolean> {
  const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

export default defineConfig(async () => {
  const wanted = process.env.TEST_DATABASE !== 'sqlite';
  const withPostgres = wanted && (await postgresAnswers());
  if (wanted && !withPostgres && (process.env.CI === 'true' || process.env.CI === '1')) {
    throw new Error(
      `PostgreSQL does not answer at ${POSTGRES_URL.replace(/:[^:@/]*@/, ':***@')}, and under CI the PostgreSQL half of the suite ` +
        'must run: start the server (.ci/run does) or set TEST_POSTGRES_URL.',
    );
  }
  if (!withPostgres) {
    console.warn(
      `\n*** PostgreSQL does not answer at ${POSTGRES_URL.replace(/:[^:@/]*@/, ':***@')} (or TEST_DATABASE=sqlite): ` +
        'the PostgreSQL half of the suite is NOT run. Set TEST_POSTGRES_URL to a server to run it. ***\n',
    );
  }
  const shared = { pool: 'forks' as const, testTimeout: 20_000, hookTimeout: 30_000 };
  // One test file more than there are cores: most files spend their time waiting (for Chromium, a child
  // process, PostgreSQL), so a third file on two cores cut the suite from 257 s to 160 s here.
  const maxWorkers = timingPhase ? 1 : os.availableParallelism() + 1;
  return {
    test: {
      // Builds dist/ (when stale) for the tests that run bin/nonsense.js.
      globalSetup: ['test/global-setup.ts'],
      maxWorkers,
      projects: [
        ...(timingPhase ? [] : [{ test: { ...shared, name: 'unit', include: UNIT } }]),
        {
          test: { ...shared, name: 'sqlite', include: timingPhase ? TIMING : ['test/**/*.test.ts'], exclude: timingPhase ? UNIT : [...UNIT, ...TIMING], env: { TEST_DATABASE: 'sqlite' } },
        },
        ...(withPostgres
          ? [
              {
                test: {
                  ...shared,
                  name: 'postgres',
                  include: timingPhase ? TIMING_ON_BOTH_ENGINES : ON_BOTH_ENGINES,
                  exclude: timingPhase ? UNIT : [...UNIT, ...TIMING],
                  env: { TEST_DATABASE: 'postgres', TEST_POSTGRES_URL: POSTGRES_URL },
                },
              },
            ]
          : []),
      ],
    },
  };
});
