import supertest from 'supertest';
import { eventually } from '../../helpers/eventually';
import { exited, freePort, spawnFlightdeck } from '../../helpers/processes';
import { startTestStack, type TestStack } from '../../helpers/stack';

const METRICS_TOKEN = 'scrape-token-for-tests-0123456789';
const ADMIN_TOKEN = 'operator-token-for-tests-0123456789';

/** Samples of a scrape by name and labels. */
function sample(text: string, name: string): number | undefined {
  const line = text.split('\n').find((entry) => entry.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

/**
 * /metrics is not open on the API's port (docs/security.md "Metrics exposure"). It is served by a
 * listener of its own (loopback by default), and on the API's port only behind the metrics token or the admin
 * token; the database-backed gauges are read at most once per interval, however often it is scraped.
 */
describe('/metrics exposure', () => {
  describe('by default', () => {
    let stack: TestStack;
    beforeAll(async () => {
      stack = await startTestStack({ worker: false });
    });
    afterAll(() => stack.close());

    it("is not served on the API's port, with or without credentials", async () => {
      await stack.http.get(`/v1/workspaces/${stack.workspaceId}`).set(stack.auth).expect(200);
      for (const headers of [{}, stack.auth, { Authorization: `Bearer ${stack.apiKey}` }]) {
        const res = await stack.http.get('/metrics').set(headers).expect(404);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(res.text).not.toContain('flightdeck_');
      }
    });

    it("serves the API's metrics on the metrics listener's app, and nothing else there", async () => {
      await stack.http.get(`/v1/workspaces/${stack.workspaceId}`).set(stack.auth).expect(200);
      const metrics = supertest(stack.app.metricsApp.callback());
      const res = await metrics.get('/metrics').expect(200);
      expect(res.headers['content-type']).toMatch(/^text\/plain/);
      expect(res.text).toContain('flightdeck_process_cpu_seconds_total');
      expect(res.text).toMatch(
        /flightdeck_http_request_duration_seconds_count\{method="GET",route="\/v1\/workspaces\/:workspaceId",status="200"\} [1-9]/,
      );
      const other = await metrics.get('/healthz').expect(404);
      expect(other.body).toMatchObject({ status: 404, code: 'not_found' });
      await metrics.get('/openapi.json').expect(404);
    });

    it('reads the database-backed gauges once per scrape, however many of them there are', async () => {
      const metrics = supertest(stack.app.metricsApp.callback());
      const reads = async () =>
        sample((await metrics.get('/metrics').expect(200)).text, 'flightdeck_metrics_state_reads_total');
      const first = await reads();
      expect(first).toBeGreaterThanOrEqual(1);
      expect(await reads()).toBe(first! + 1);
    });
  });

  describe('with the gauges reused between scrapes', () => {
    let stack: TestStack;
    beforeAll(async () => {
      stack = await startTestStack({ worker: false, metrics: { stateIntervalMs: 3_600_000 } });
    });
    afterAll(() => stack.close());

    it('runs the aggregate queries once for a burst of scrapes', async () => {
      const metrics = supertest(stack.app.metricsApp.callback());
      const scrapes = await Promise.all(
        Array.from({ length: 10 }, () => metrics.get('/metrics').expect(200)),
      );
      for (let n = 0; n < 10; n++) scrapes.push(await metrics.get('/metrics').expect(200));
      for (const res of scrapes) {
        expect(sample(res.text, 'flightdeck_metrics_state_reads_total')).toBe(1);
        expect(res.text).toMatch(/^flightdeck_outbox_backlog \d+$/m);
      }
    });
  });

  describe('with a metrics token', () => {
    let stack: TestStack;
    beforeAll(async () => {
      stack = await startTestStack({
        worker: false,
        adminToken: ADMIN_TOKEN,
        metrics: { token: METRICS_TOKEN },
      });
    });
    afterAll(() => stack.close());

    it.each([
      ['no credential', {}],
      ['a wrong token', { Authorization: 'Bearer scrape-token-for-tests-0123456780' }],
      ['the token as x-api-key', { 'x-api-key': METRICS_TOKEN }],
      ['an API key', { Authorization: 'Bearer <api key>' }],
    ])('answers 401 problem+json for %s, on both listeners', async (_, headers: Record<string, string>) => {
      const sent = Object.fromEntries(
        Object.entries(headers).map(([name, value]) => [name, value.replace('<api key>', stack.apiKey)]),
      );
      for (const http of [stack.http, supertest(stack.app.metricsApp.callback())]) {
        const res = await http.get('/metrics').set(sent).expect(401);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
        expect(res.body).toMatchObject({ status: 401, code: 'unauthenticated', instance: '/metrics' });
        expect(res.text).not.toContain('flightdeck_process_cpu_seconds_total');
      }
    });

    it('serves the metrics for Authorization: Bearer <metrics token> or <admin token>', async () => {
      for (const http of [stack.http, supertest(stack.app.metricsApp.callback())]) {
        for (const token of [METRICS_TOKEN, ADMIN_TOKEN]) {
          const res = await http.get('/metrics').set('Authorization', `Bearer ${token}`).expect(200);
          expect(res.headers['content-type']).toMatch(/^text\/plain/);
          expect(res.text).toContain('flightdeck_process_cpu_seconds_total');
        }
      }
    });

    it('leaves the other routes as they were', async () => {
      await stack.http.get('/healthz').expect(200);
      await stack.http.get('/openapi.json').expect(200);
      await stack.http.get(`/v1/workspaces/${stack.workspaceId}`).set(stack.auth).expect(200);
    });
  });

  describe('with the admin token only', () => {
    let stack: TestStack;
    beforeAll(async () => {
      stack = await startTestStack({ worker: false, adminToken: ADMIN_TOKEN });
    });
    afterAll(() => stack.close());

    it("serves the API's port only for the admin token, and the metrics listener to anyone who reaches it", async () => {
      await stack.http.get('/metrics').expect(401);
      await stack.http.get('/metrics').set(stack.auth).expect(401);
      await stack.http.get('/metrics').set('Authorization', `Bearer ${ADMIN_TOKEN}`).expect(200);
      await supertest(stack.app.metricsApp.callback()).get('/metrics').expect(200);
    });
  });

  describe('flightdeck api', () => {
    let stack: TestStack;
    beforeAll(async () => {
      stack = await startTestStack({ worker: false });
    });
    afterAll(() => stack.close());

    const run = async (env: NodeJS.ProcessEnv, check: (api: string, scrape: string) => Promise<void>) => {
      const [port, metricsPort] = [await freePort(), await freePort()];
      const api = spawnFlightdeck(stack, ['api'], {
        env: { FLIGHTDECK_PORT: String(port), FLIGHTDECK_METRICS_PORT: String(metricsPort), ...env },
      });
      const main = `http://127.0.0.1:${port}`;
      const scrape = `http://127.0.0.1:${metricsPort}`;
      try {
        await eventually(async () => (await fetch(`${main}/healthz`)).status === 200, {
          what: 'the API process to listen',
          timeoutMs: 30_000,
        });
        await check(main, scrape);
        api.kill('SIGTERM');
        await exited(api);
        expect(api.exitCode).toBe(0);
        await expect(fetch(`${main}/healthz`)).rejects.toThrow();
        await expect(fetch(`${scrape}/metrics`)).rejects.toThrow();
      } finally {
        if (api.exitCode === null && api.signalCode === null) api.kill('SIGKILL');
      }
    };

    it('serves /metrics on its own loopback port only, and closes both listeners on SIGTERM', async () => {
      await run({}, async (main, scrape) => {
        const served = await fetch(`${scrape}/metrics`);
        expect(served.status).toBe(200);
        expect(await served.text()).toContain('flightdeck_process_cpu_seconds_total');
        expect((await fetch(`${scrape}/healthz`)).status).toBe(404);
        const closed = await fetch(`${main}/metrics`);
        expect(closed.status).toBe(404);
        expect(await closed.text()).not.toContain('flightdeck_');
      });
    }, 60_000);

    it('with FLIGHTDECK_METRICS_TOKEN, serves it on both ports behind the token', async () => {
      await run({ FLIGHTDECK_METRICS_TOKEN: METRICS_TOKEN }, async (main, scrape) => {
        for (const base of [main, scrape]) {
          const denied = await fetch(`${base}/metrics`);
          expect(denied.status).toBe(401);
          expect(denied.headers.get('content-type')).toMatch(/^application\/problem\+json/);
          const served = await fetch(`${base}/metrics`, {
            headers: { Authorization: `Bearer ${METRICS_TOKEN}` },
          });
          expect(served.status).toBe(200);
          expect(await served.text()).toContain('flightdeck_process_cpu_seconds_total');
        }
      });
    }, 60_000);
  });

  describe('flightdeck worker', () => {
    let stack: TestStack;
    beforeAll(async () => {
      stack = await startTestStack({ worker: false });
    });
    afterAll(() => stack.close());

    it("with FLIGHTDECK_METRICS_PORT, serves its own figures and the Temporal SDK's, and closes on SIGTERM", async () => {
      const port = await freePort();
      const worker = spawnFlightdeck(stack, ['worker'], { env: { FLIGHTDECK_METRICS_PORT: String(port) } });
      const scrape = `http://127.0.0.1:${port}`;
      try {
        const text = await eventually(
          async () => {
            const served = await (await fetch(`${scrape}/metrics`)).text();
            return /^temporal_\w+/m.test(served) && served;
          },
          { what: "the worker's metrics with the SDK's", timeoutMs: 30_000 },
        );
        expect(text).toMatch(/^flightdeck_worker_process_cpu_seconds_total /m);
        expect(text).toMatch(/^flightdeck_lease_expiries_total 0$/m);
        expect(text).not.toMatch(/^flightdeck_process_cpu_seconds_total /m);
        const figures = (await (await fetch(`${scrape}/metrics.json`)).json()) as {
          metrics: { name: string }[];
          texts: string[];
        };
        expect(figures.metrics.map((metric) => metric.name)).toEqual(
          expect.arrayContaining([
            'flightdeck_worker_process_cpu_seconds_total',
            'flightdeck_lease_expiries_total',
          ]),
        );
        expect(figures.texts.join('\n')).toMatch(/^temporal_\w+/m);
        expect((await fetch(`${scrape}/healthz`)).status).toBe(404);
        worker.kill('SIGTERM');
        await exited(worker);
        expect(worker.exitCode).toBe(0);
        await expect(fetch(`${scrape}/metrics`)).rejects.toThrow();
      } finally {
        if (worker.exitCode === null && worker.signalCode === null) worker.kill('SIGKILL');
      }
    }, 60_000);
  });
});
