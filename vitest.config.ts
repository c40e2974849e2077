/**
 * Two projects: the whole suite on the embedded SQLite, and every test that goes through storage or
 * HTTP again on PostgreSQL (TEST_DATABASE=postgres; each test file gets its own database). When no
 * PostgreSQL server answers, the second project is left out and the run says so.
 */
import pg from 'pg';
import { defineConfig } from 'vitest/config';

const POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const ON_BOTH_ENGINES = ['test/routes/**/*.test.ts', 'test/storage/**/*.test.ts', 'test/import/**/*.test.ts', 'test/odata/**/*.test.ts', 'test/fuzz/**/*.test.ts', 'test/hardening/query-plans.test.ts'];

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
  const withPostgres = process.env.TEST_DATABASE !== 'sqlite' && (await postgresAnswers());
  if (!withPostgres) {
    console.warn(
      `\n*** PostgreSQL does not answer at ${POSTGRES_URL.replace(/:[^:@/]*@/, ':***@')} (or TEST_DATABASE=sqlite): ` +
        'the PostgreSQL half of the suite is NOT run. Set TEST_POSTGRES_URL to a server to run it. ***\n',
    );
  }
  const shared = { pool: 'forks' as const, testTimeout: 20_000, hookTimeout: 30_000 };
  return {
    test: {
      projects: [
        { test: { ...shared, name: 'sqlite', include: ['test/**/*.test.ts'], env: { TEST_DATABASE: 'sqlite' } } },
        ...(withPostgres
          ? [{ test: { ...shared, name: 'postgres', include: ON_BOTH_ENGINES, env: { TEST_DATABASE: 'postgres', TEST_POSTGRES_URL: POSTGRES_URL } } }]
          : []),
      ],
    },
  };
});
