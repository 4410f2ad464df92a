import supertest from 'supertest';
import { eventually } from '../../helpers/eventually';
import { exited, freePort, spawnFlightdeck } from '../../helpers/processes';
import { startTestStack, type TestStack } from '../../helpers/stack';

const METRICS_TOKEN = 'scrape-token-for-tests-0123456789';

describe('/metrics protection', () => {
  describe('with a metrics token', () => {
    let stack: TestStack;
    beforeAll(async () => {
      stack = await startTestStack({ worker: false, metrics: { token: METRICS_TOKEN } });
    });
    afterAll(() => stack.close());

    it.each([
      ['no credential', {}],
      ['a wrong token', { Authorization: 'Bearer scrape-token-for-tests-0123456780' }],
      ['the token as x-api-key', { 'x-api-key': METRICS_TOKEN }],
      ['an API key', { Authorization: 'Bearer <api key>' }],
    ])('answers 401 problem+json for %s', async (_, headers: Record<string, string>) => {
      const sent = Object.fromEntries(
        Object.entries(headers).map(([name, value]) => [name, value.replace('<api key>', stack.apiKey)]),
      );
      const res = await stack.http.get('/metrics').set(sent).expect(401);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
      expect(res.body).toMatchObject({ status: 401, code: 'unauthenticated', instance: '/metrics' });
      expect(res.text).not.toContain('flightdeck_process_cpu_seconds_total');
    });

    it('serves the metrics for Authorization: Bearer <token>', async () => {
      const res = await stack.http
        .get('/metrics')
        .set('Authorization', `Bearer ${METRICS_TOKEN}`)
        .expect(200);
      expect(res.headers['content-type']).toMatch(/^text\/plain/);
      expect(res.text).toContain('flightdeck_process_cpu_seconds_total');
    });

    it('leaves the other routes as they were', async () => {
      await stack.http.get('/healthz').expect(200);
      await stack.http.get('/openapi.json').expect(200);
      await stack.http.get(`/v1/workspaces/${stack.workspaceId}`).set(stack.auth).expect(200);
    });
  });

  describe('on a listener of its own', () => {
    let stack: TestStack;
    beforeAll(async () => {
      stack = await startTestStack({ worker: false, metrics: { ownListener: true } });
    });
    afterAll(() => stack.close());

    it("answers 404 on the API's app and serves the API's metrics on its own app", async () => {
      await stack.http.get(`/v1/workspaces/${stack.workspaceId}`).set(stack.auth).expect(200);
      const missing = await stack.http.get('/metrics').expect(404);
      expect(missing.headers['content-type']).toMatch(/^application\/problem\+json/);

      const metrics = supertest(stack.app.metricsApp!.callback());
      const res = await metrics.get('/metrics').expect(200);
      expect(res.text).toMatch(
        /flightdeck_http_request_duration_seconds_count\{method="GET",route="\/v1\/workspaces\/:workspaceId",status="200"\} [1-9]/,
      );
      const other = await metrics.get('/healthz').expect(404);
      expect(other.body).toMatchObject({ status: 404, code: 'not_found' });
      await metrics.get('/openapi.json').expect(404);
    });

    it('has no metrics app and no token unless asked', async () => {
      const plain = await startTestStack({ worker: false });
      try {
        expect(plain.app.metricsApp).toBeUndefined();
        const res = await plain.http.get('/metrics').expect(200);
        expect(res.text).toContain('flightdeck_process_cpu_seconds_total');
      } finally {
        await plain.close();
      }
    });
  });

  describe('flightdeck api with FLIGHTDECK_METRICS_PORT and FLIGHTDECK_METRICS_TOKEN', () => {
    let stack: TestStack;
    beforeAll(async () => {
      stack = await startTestStack({ worker: false });
    });
    afterAll(() => stack.close());

    it('serves /metrics on its own port only, behind the token, and closes both listeners on SIGTERM', async () => {
      const [port, metricsPort] = [await freePort(), await freePort()];
      const api = spawnFlightdeck(stack, ['api'], {
        env: {
          FLIGHTDECK_PORT: String(port),
          FLIGHTDECK_METRICS_PORT: String(metricsPort),
          FLIGHTDECK_METRICS_TOKEN: METRICS_TOKEN,
        },
      });
      const main = `http://127.0.0.1:${port}`;
      const scrape = `http://127.0.0.1:${metricsPort}`;
      try {
        await eventually(async () => (await fetch(`${main}/healthz`)).status === 200, {
          what: 'the API process to listen',
          timeoutMs: 30_000,
        });
        await eventually(async () => (await fetch(`${scrape}/metrics`)).status === 401, {
          what: 'the metrics listener',
          timeoutMs: 10_000,
        });
        expect((await fetch(`${main}/metrics`)).status).toBe(404);
        expect(
          (await fetch(`${main}/metrics`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } })).status,
        ).toBe(404);
        const denied = await fetch(`${scrape}/metrics`);
        expect(denied.status).toBe(401);
        expect(denied.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        const served = await fetch(`${scrape}/metrics`, {
          headers: { Authorization: `Bearer ${METRICS_TOKEN}` },
        });
        expect(served.status).toBe(200);
        expect(await served.text()).toContain('flightdeck_process_cpu_seconds_total');
        expect((await fetch(`${scrape}/healthz`)).status).toBe(404);

        api.kill('SIGTERM');
        await exited(api);
        expect(api.exitCode).toBe(0);
        await expect(fetch(`${main}/healthz`)).rejects.toThrow();
        await expect(fetch(`${scrape}/metrics`)).rejects.toThrow();
      } finally {
        if (api.exitCode === null && api.signalCode === null) api.kill('SIGKILL');
      }
    }, 60_000);
  });
});
