/**
 * Two builds of the service under the same load at the same time: a saved build (the base) and the
 * current one, each started as `npm start` starts it on the same database, each driven by its own
 * autocannon with half the connections, in rounds that run both at once. Noise from the rest of a
 * shared machine then hits both builds in the same seconds: a change of 2-5 % a request shows in
 * every round, where rounds run one after the other (as `npm run bench` alternates with the bare
 * server) spread by more than that on a busy host. For deciding whether a change to the hot path
 * helps; the bounds of the performance issue are measured by `npm run bench`.
 *
 *   npm run bench:ab -- --save      # keep the current build (dist/) as the base
 *   (change the code)
 *   npm run bench:ab                # the base against the current build: 100,000 entries, random
 *   BENCH_AB_PATH=uuid BENCH_ENTRIES=1000000 BENCH_KEEP=1 npm run bench:ab
 *   BENCH_ROUNDS=9 BENCH_SECONDS=4 BENCH_CONNECTIONS=20 npm run bench:ab
 *   BENCH_AB_BASE=/tmp/a/dist BENCH_AB_HEAD=/tmp/b/dist BENCH_AB_STARTS=5 npm run bench:ab
 *   BENCH_AB_BASE=dist BENCH_AB_HEAD_FLAGS=--max-semi-space-size=4 npm run bench:ab   # a Node flag against none
 *
 * The base is the build saved by `--save`, in node_modules/.cache/nonsense-ab/ (inside node_modules,
 * so that it finds the same packages; npm ci removes it), or any built dist/ named by BENCH_AB_BASE;
 * the head is this checkout's build (bin/nonsense.js), or the dist/ named by BENCH_AB_HEAD. A dist/
 * outside this checkout finds its packages in a node_modules beside it. Besides the CPU time a
 * request, it reports each build's resident memory after the load and, with BENCH_AB_STARTS=n, the
 * median of n more starts of each, alternately, from the command to its first answer.
 * BENCH_AB_HEAD_FLAGS adds Node flags (space-separated) to the head's command only.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadRound, type LoadRound, median, memory, seed, type Service, startFlags, startService, waitForQuiet, waitForSnapshot } from './lib.ts';

const SAVED = path.resolve('node_modules/.cache/nonsense-ab/dist');
const BASE = path.resolve(process.env.BENCH_AB_BASE ?? SAVED);
const HEAD = process.env.BENCH_AB_HEAD === undefined ? 'bin/nonsense.js' : path.join(path.resolve(process.env.BENCH_AB_HEAD), 'cli.js');
const STARTS = Number(process.env.BENCH_AB_STARTS ?? 0);
const ENTRIES = Number(process.env.BENCH_ENTRIES ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
const HEAD_FLAGS = process.env.BENCH_AB_HEAD_FLAGS?.split(' ').filter((flag) => flag !== '') ?? [];

if (process.argv.includes('--save')) {
  fs.rmSync(SAVED, { recursive: true, force: true });
  fs.cpSync('dist', SAVED, { recursive: true });
  console.log(`Saved dist/ as the base (${SAVED}).`);
  process.exit(0);
}
if (!fs.existsSync(path.join(BASE, 'cli.js'))) {
  console.error(`No base build in ${BASE}: run \`npm run bench:ab -- --save\` before the change.`);
  process.exit(1);
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nonsense-ab-'));
const seeded = await seed(ENTRIES, dir);
const builds = [
  { name: 'base', script: path.join(BASE, 'cli.js'), port: '18191', flags: undefined },
  { name: 'current', script: HEAD, port: '18192', flags: HEAD_FLAGS.length === 0 ? undefined : [...startFlags(), ...HEAD_FLAGS] },
];
const serviceEnv = (port: string) => ({ DATABASE_URL: seeded.file, PORT: port, GALAXY: 'off', RATE_LIMIT_READ: 'off' });
const services: Service[] = [];
try {
  for (const build of builds) services.push(await startService(serviceEnv(build.port), '/healthz', build.flags, build.script));
  for (const service of services) await waitForSnapshot(service.url, ENTRIES);
  for (const service of services) await waitForQuiet(service.pid);
  const byUuid = process.env.BENCH_AB_PATH === 'uuid';
  const paths = byUuid ? seeded.sample.map((u) => `/api/v1/nonsense/${u}`) : undefined;
  const target = byUuid ? '' : '/api/v1/nonsense/random';
  const round = (seconds: number) => Promise.all(services.map((s) => loadRound(`${s.url}${target}`, s.pid, { connections: CONNECTIONS / 2, seconds, paths })));
  await round(SECONDS); // warm-up, not counted
  const rounds: LoadRound[][] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const [base, current] = await round(SECONDS);
    rounds.push([base!, current!]);
    console.log(`round ${r + 1}: base ${base!.cpu.toFixed(1)} µs/req (${base!.rps.toFixed(0)} req/s), current ${current!.cpu.toFixed(1)} µs/req (${current!.rps.toFixed(0)} req/s)${base!.errors + current!.errors > 0 ? ', errors' : ''}`);
  }
  const cpu = (k: number) => median(rounds.map((r) => r[k]!.cpu));
  const lower = rounds.filter(([base, current]) => current!.cpu < base!.cpu).length;
  console.log(
    `\n${ENTRIES.toLocaleString('en')} entries, ${byUuid ? 'by UUID' : 'random'}: base ${cpu(0).toFixed(1)} µs, current ${cpu(1).toFixed(1)} µs CPU a request (medians); ` +
      `current/base ${(cpu(1) / cpu(0)).toFixed(3)}; the current build cheaper in ${lower} of ${ROUNDS} rounds`,
  );
  const rps = (k: number) => median(rounds.map((r) => r[k]!.rps));
  console.log(`requests a second (medians, each build under half the connections): base ${rps(0).toFixed(0)}, current ${rps(1).toFixed(0)}; current/base ${(rps(1) / rps(0)).toFixed(3)}`);
  const [baseMemory, currentMemory] = services.map((s) => memory(s.pid));
  console.log(
    `resident memory after the load: base ${baseMemory!.rss.toFixed(1)} MiB (peak ${baseMemory!.peak.toFixed(1)}), ` +
      `current ${currentMemory!.rss.toFixed(1)} MiB (peak ${currentMemory!.peak.toFixed(1)}); current/base ${(currentMemory!.rss / baseMemory!.rss).toFixed(3)}`,
  );
  if (STARTS > 0) {
    for (const service of services.splice(0)) await service.stop();
    const starts: number[][] = [[], []];
    for (let n = 0; n < STARTS; n++) {
      // Alternately first, so that neither always starts on a machine the other has just left busy.
      for (const k of n % 2 === 0 ? [0, 1] : [1, 0]) {
        const service = await startService(serviceEnv(builds[k]!.port), '/healthz', builds[k]!.flags, builds[k]!.script);
        starts[k]!.push(service.startMs);
        await service.stop();
      }
    }
    const [base, current] = starts.map(median);
    console.log(`start to first answer (median of ${STARTS}): base ${base!.toFixed(0)} ms, current ${current!.toFixed(0)} ms; current/base ${(current! / base!).toFixed(3)}`);
  }
} finally {
  for (const service of services) await service.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
