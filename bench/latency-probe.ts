/**
 * A latency probe: one request at a time from its own process, over one keep-alive connection, timed
 * from sending the request to the last byte of the answer with sub-millisecond resolution. The load
 * benchmark runs it once alone (the idle figure) and once during the load, so that both figures come
 * from the same instrument and neither includes the load generator's own event-loop delays.
 *
 * Run as a child process: it receives `{ base, requests, seconds, gapMs }` over IPC, sends back the
 * sorted latencies in milliseconds of each kind of request and the number of answers that were not
 * 2xx/304, and exits.
 */
import http from 'node:http';

interface ProbeOrder {
  base: string;
  /** Requests sent in turn: a kind (what the latencies are grouped by) and a path. */
  requests: { kind: string; path: string }[];
  seconds: number;
  /** Pause between two requests, so that the probe adds little load of its own. */
  gapMs: number;
}

export interface ProbeResult {
  /** Sorted latencies in milliseconds, by kind. */
  latencies: Record<string, number[]>;
  failures: number;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function timed(url: URL): Promise<{ ms: number; ok: boolean }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const request = http.get(url, { agent }, (response) => {
      response.on('data', () => {});
      response.on('end', () => {
        const status = response.statusCode ?? 0;
        resolve({ ms: performance.now() - started, ok: (status >= 200 && status < 300) || status === 304 });
      });
      response.on('error', reject);
    });
    request.on('error', reject);
  });
}

async function probe({ base, requests, seconds, gapMs }: ProbeOrder): Promise<ProbeResult> {
  const latencies: Record<string, number[]> = {};
  let failures = 0;
  // One request untimed first: the connection's setup and this process's own first run of the code
  // took 10 to 15 ms, which is the probe's, not the service's.
  for (const { path } of requests) await timed(new URL(path, base));
  const until = performance.now() + seconds * 1000;
  for (let i = 0; performance.now() < until; i++) {
    const { kind, path } = requests[i % requests.length]!;
    const { ms, ok } = await timed(new URL(path, base));
    if (ok) (latencies[kind] ??= []).push(ms);
    else failures++;
    await new Promise((resolve) => setTimeout(resolve, gapMs));
  }
  agent.destroy();
  for (const kind in latencies) latencies[kind]!.sort((a, b) => a - b);
  return { latencies, failures };
}

process.once('message', (order: ProbeOrder) => {
  void probe(order).then((result) => process.send!(result, undefined, {}, () => process.exit(0)));
});
