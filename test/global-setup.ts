/**
 * Runs once before the test files: builds dist/ when the sources changed since the last build, so
 * the tests that start the command line (`bin/nonsense.js`) run the current code, compiled, as
 * production does, and each spawned process starts fast.
 */
import { ensureBuilt } from '../scripts/build.js';

export default async function setup(): Promise<void> {
  await ensureBuilt();
}
