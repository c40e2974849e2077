/**
 * The fast lane's guard (src/plugins/fast-lane.ts, `attach`): an app whose lane routes get a hook, a
 * route option or a config key the lane does not mirror refuses to start and says what; the service's
 * own app, with every plugin that adds hooks switched on, starts.
 */
import Fastify, { type FastifyInstance, type FastifyPluginAsync } from 'fastify';
import { describe, expect, it } from 'vitest';
import { FastLane } from '../../src/plugins/fast-lane.ts';
import { createTestApp } from '../helper.ts';

const ANSWER = { status: 200 as const, headers: ['content-type', 'text/plain'], body: 'lane' };

/** laneApp is a Fastify app with a lane route `/api/hot` declared by an encapsulated plugin set up by `setup`. */
async function laneApp(setup: (app: FastifyInstance, lane: FastLane) => void, route: (api: FastifyInstance) => void = (api) => api.get('/hot', () => 'fastify')) {
  const lane = new FastLane();
  const app = Fastify({ serverFactory: lane.serverFactory });
  lane.attach(app);
  setup(app, lane);
  const api: FastifyPluginAsync = async (api) => {
    route(api);
    lane.get('/api/hot', '/api/hot', () => ANSWER);
  };
  await app.register(api, { prefix: '/api' });
  return app;
}

describe('the fast lane guard', () => {
  it('opens the lane when every hook of its routes is one it mirrors', async () => {
    const app = await laneApp((app, lane) => app.addHook('onRequest', lane.mirrors('commonHeaders', (_request, _reply, done) => done())));
    try {
      const base = await app.listen({ port: 0, host: '127.0.0.1' });
      expect(await (await fetch(`${base}/api/hot`)).text()).toBe('lane');
    } finally {
      await app.close();
    }
  });

  it('refuses to start when a plugin adds a hook the lane does not mirror, and names it', async () => {
    const app = await laneApp((app) => app.addHook('onSend', async function addTracing() {}));
    await expect(app.ready()).rejects.toThrow(/fast lane does not mirror.*GET \/api\/hot: the onSend hook `addTracing`/);
  });

  it('sees the hooks of the plugin that declares the route, not only the root', async () => {
    const app = await laneApp(
      () => {},
      (api) => {
        api.addHook('preHandler', async function authenticate() {});
        api.get('/hot', () => 'fastify');
      },
    );
    await expect(app.ready()).rejects.toThrow(/GET \/api\/hot: the preHandler hook `authenticate`/);
  });

  it('refuses a route option or a config key it does not know', async () => {
    const withHook = await laneApp(() => {}, (api) => api.get('/hot', { onResponse: (_request, _reply, done) => done() }, () => 'fastify'));
    await expect(withHook.ready()).rejects.toThrow(/GET \/api\/hot: the onResponse hook/);
    // A constraint sends some of the path's requests elsewhere, which the lane would answer all the same.
    const withOption = await laneApp(() => {}, (api) => api.get('/hot', { constraints: { host: 'example.com' } }, () => 'fastify'));
    await expect(withOption.ready()).rejects.toThrow(/GET \/api\/hot: the route option `constraints`/);
    const withConfig = await laneApp(() => {}, (api) => api.get('/hot', { config: { audit: true } }, () => 'fastify'));
    await expect(withConfig.ready()).rejects.toThrow(/GET \/api\/hot: the route config `audit`/);
  });

  it('refuses a lane route that no Fastify route declares', async () => {
    const app = await laneApp(() => {}, () => {});
    await expect(app.ready()).rejects.toThrow(/\/api\/hot: no Fastify GET route declares it/);
  });

  it("lets the service's own app start with rate limits, overload, the access log and metrics on", async () => {
    const t = await createTestApp({ env: { RATE_LIMIT_READ: '100/1m', LOG_LEVEL: 'info' } });
    try {
      expect(t.app.hasRoute({ method: 'GET', url: '/api/v1/nonsense/random' })).toBe(true);
    } finally {
      await t.close();
    }
  });
});
