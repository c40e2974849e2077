#!/usr/bin/env node
// Entry point of the `nonsense` command: runs the compiled service in dist/, which `npm install`
// builds (the `prepare` script) and `npm run build` rebuilds. No TypeScript is compiled at run time.
// `npm start` sets glibc's allocator settings in the environment, which a process cannot change for
// itself once started (docs/deployment.md, "Memory: the allocator's settings"), and `exec`s node so
// that signals reach it; a process manager or container sets the same environment and runs this file
// itself (docs/deployment.md, "Under a process manager"). It does not start itself again with the
// settings: a second process would stand between the manager and the server, as a shell would.
import fs from 'node:fs';

const cli = new URL('../dist/cli.js', import.meta.url);
if (!fs.existsSync(cli)) {
  console.error('nonsense: the service is not built (dist/ is missing). Run `npm run build` (or `npm install`) first.');
  process.exit(1);
}
// In a checkout, a build older than the sources would run old code: say so (a check of a few ms).
const builder = new URL('../scripts/build.js', import.meta.url);
if (fs.existsSync(builder) && fs.existsSync(new URL('../src/', import.meta.url))) {
  try {
    const { isBuildFresh } = await import(builder.href);
    if (!isBuildFresh()) console.error('nonsense: src/ changed since dist/ was built; run `npm run build` to run the current code.');
  } catch (error) {
    // Only a warning is at stake: the service runs whatever dist/ holds.
    console.error(`nonsense: could not tell whether dist/ is up to date (${error instanceof Error ? error.message : String(error)}).`);
  }
}
await import(cli.href);
