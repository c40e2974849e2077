#!/usr/bin/env node
// Entry point of the `nonsense` command: runs the compiled service in dist/, which `npm install`
// builds (the `prepare` script) and `npm run build` rebuilds. No TypeScript is compiled at run time.
// Node's default heap settings: a smaller young generation (--max-semi-space-size) or a slower-growing
// heap (--heap-growing-percent) saved memory but cost the hot path a sixth of its throughput in
// garbage collection; the memory is saved instead by loading only what a process uses
// (docs/performance.md).
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
