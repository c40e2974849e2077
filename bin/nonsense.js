#!/usr/bin/env -S node --heap-growing-percent=50
// Entry point of the `nonsense` command: runs the compiled service in dist/, which `npm install`
// builds (the `prepare` script) and `npm run build` rebuilds. No TypeScript is compiled at run time.
// Memory: the heap grows by half of what a full collection leaves instead of up to four times, so a
// burst of requests leaves it near its live size (under the 60 s abuse fuzz: +99 MiB instead of
// +225 MiB) for about 2 µs more garbage collection a request. Node's young generation stays at its
// default: a smaller one cost the hot path another 3 µs. `npm start` passes the same flag; see
// docs/performance.md.
import fs from 'node:fs';

const cli = new URL('../dist/cli.js', import.meta.url);
if (!fs.existsSync(cli)) {
  console.error('nonsense: the service is not built (dist/ is missing). Run `npm run build` (or `npm install`) first.');
  process.exit(1);
}
// In a checkout, a build older than the sources would run old code: say so (a check of a few ms).
const builder = new URL('../scripts/build.js', import.meta.url);
if (fs.existsSync(builder)) {
  const { isBuildFresh } = await import(builder.href);
  if (!isBuildFresh()) console.error('nonsense: src/ changed since dist/ was built; run `npm run build` to run the current code.');
}
await import(cli.href);
