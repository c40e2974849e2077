#!/usr/bin/env -S node --max-semi-space-size=4 --heap-growing-percent=50
// Entry point of the `nonsense` command: runs the compiled service in dist/, which `npm install`
// builds (the `prepare` script) and `npm run build` rebuilds. No TypeScript is compiled at run time.
// Memory: a young generation of 2 × 4 MiB instead of Node's 2 × 16 MiB (24 MiB less resident memory,
// for more frequent and shorter scavenges), and a heap that grows by half of what a full collection
// leaves instead of up to four times (under a burst of requests the heap stays near its live size
// instead of growing by 80 MiB of garbage); see docs/performance.md. `npm start` passes the same flags.
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
