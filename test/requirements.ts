/**
 * What some tests need from the machine (a PostgreSQL or Redis server, Chromium). Outside CI a missing
 * one skips those tests with a message saying so; under CI=true it fails the run instead, so that a
 * green CI always means every test ran (`.ci/run` installs and starts what they need).
 */
export const IN_CI = process.env.CI === 'true' || process.env.CI === '1';

/**
 * skipWithout returns true when the tests needing `what` should be skipped: never under CI, where a
 * missing requirement throws, failing the file with `hint`.
 */
export function skipWithout(what: string, available: boolean, hint: string): boolean {
  if (available) return false;
  if (IN_CI) throw new Error(`${what} is required under CI but is not available: ${hint}`);
  console.warn(`\n*** ${what} is not available: the tests that need it are SKIPPED (${hint}). ***\n`);
  return true;
}
