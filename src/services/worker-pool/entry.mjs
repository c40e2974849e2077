// The script every worker thread of the service starts with (worker-pool/index.ts). It loads the
// worker module its workerData names: the compiled .js of a build, or, when the service runs from its
// TypeScript sources (the tests, the tools run with tsx), the .ts through tsx, which only the main
// thread has loaded. A pool's task names the export that runs it.
import { workerData } from 'node:worker_threads';

const source = workerData?.workerModule;
if (typeof source !== 'string') throw new Error('a worker thread was started without its workerData.workerModule');
const worker = source.endsWith('.ts') ? await (await import('tsx/esm/api')).tsImport(source, import.meta.url) : await import(source);

/** run runs one task of a pool with the export it names; one without a name only starts the thread (TaskPool's startTogether). */
export default function run({ name, task }) {
  return name === undefined ? undefined : worker[name](task);
}
