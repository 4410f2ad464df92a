import supertest from 'supertest';
import { Validator } from '@seriousme/openapi-schema-validator';
import { startTestStack, type TestStack } from '../helpers/stack';

const ADMIN_TOKEN = 'operator-token-for-tests-0123456789';

describe('HTTP skeleton', () => {
  let stack: TestStack;
  const ws = () => `/v1/workspaces/${stack.workspaceId}`;

  beforeAll(async () => {
    stack = await startTestStack({ worker: false, adminToken: ADMIN_TOKEN, bodyLimit: '2kb' });
  });
  afterAll(() => stack.close());

  describe('health', () => {
    it('answers liveness without credentials', async () => {
      const res = await stack.http.get('/healthz').expect(200);
      expect(res.body).toEqual({ status: 'ok' });
    });

    it('reports PostgreSQL and Temporal as ready', async () => {
      const res = await stack.http.get('/readyz').expect(200);
      expect(res.body.status).toBe('ok');
      expect(res.body.checks.postgres.ok).toBe(true);
      expect(res.body.checks.temporal.ok).toBe(true);
    });
  });

  describe('authentication', () => {
    it('returns the workspace for its key, under /v1 and /api/v1, by x-api-key or Bearer', async () => {
      const viaHeader = await stack.http.get(ws()).set(stack.auth).expect(200);
      expect(viaHeader.body).toMatchObject({ id: stack.workspaceId, slug: 'test-workspace' });
      const viaBearer = await stack.http
        .get(`/api${ws()}`)
        .set('Authorization', `Bearer ${stack.apiKey}`)
        .expect(200);
      expect(viaBearer.body).toEqual(viaHeader.body);
    });

    it.each([
      ['no key', {}],
      ['a wrong key', { 'x-api-key': 'fdk_not-a-real-key' }],
      ['a malformed bearer', { Authorization: 'Basic abc' }],
    ])('answers 401 problem+json for %s', async (_, headers) => {
      const res = await stack.http.get(ws()).set(headers).expect(401);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
      expect(res.body).toMatchObject({ status: 401, code: 'unauthenticated', title: 'Unauthorized' });
      expect(res.body.type).toMatch(/^urn:flightdeck:problem:/);
      expect(JSON.stringify(res.body)).not.toMatch(/\bat .*\.(ts|js):\d+/);
    });

    it('refuses every authenticated route without a key, before reading its input', async () => {
      const protectedRoutes = stack.app.routes.filter((route) => route.auth !== 'none');
      expect(protectedRoutes.length).toBeGreaterThan(40);
      for (const route of protectedRoutes) {
        const path = `/v1${route.path.replace(/\{\w+\}/g, '00000000-0000-7000-8000-000000000000')}`;
        const res = await stack.http[route.method](path).send({});
        expect({ route: `${route.method} ${route.path}`, status: res.status }).toEqual({
          route: `${route.method} ${route.path}`,
          status: 401,
        });
      }
    });

    it("answers 404 for another workspace's id", async () => {
      const other = await stack.http
        .post('/v1/admin/workspaces')
        .set('Authorization', `Bearer ${ADMIN_TOKEN}`)
        .send({ name: 'Other team' })
        .expect(201);
      const res = await stack.http.get(`/v1/workspaces/${other.body.id}`).set(stack.auth).expect(404);
      expect(res.body.code).toBe('not_found');
    });
  });

  describe('admin API', () => {
    it('creates a workspace and a key that then works', async () => {
      const created = await stack.http
        .post('/v1/admin/workspaces')
        .set('Authorization', `Bearer ${ADMIN_TOKEN}`)
        .send({ name: 'Platform', slug: 'platform' })
        .expect(201);
      const key = await stack.http
        .post(`/v1/admin/workspaces/${created.body.id}/api-keys`)
        .set('Authorization', `Bearer ${ADMIN_TOKEN}`)
        .send({ name: 'ci' })
        .expect(201);
      expect(key.body.key).toMatch(/^fdk_/);
      expect(key.body.prefix).toBe(key.body.key.slice(0, 12));
      await stack.http.get(`/v1/workspaces/${created.body.id}`).set('x-api-key', key.body.key).expect(200);
    });

    it('answers 409 for a duplicate workspace slug', async () => {
      const res = await stack.http
        .post('/v1/admin/workspaces')
        .set('Authorization', `Bearer ${ADMIN_TOKEN}`)
        .send({ name: 'Test workspace' })
        .expect(409);
      expect(res.body.code).toBe('duplicate');
    });

    it('refuses an API key where the operator token is required', async () => {
      await stack.http.post('/v1/admin/workspaces').set(stack.auth).send({ name: 'Nope' }).expect(401);
    });
  });

  describe('request handling', () => {
    it('validates path parameters with the field path', async () => {
      const res = await stack.http.get('/v1/workspaces/not-a-uuid').set(stack.auth).expect(400);
      expect(res.body.errors).toEqual([expect.objectContaining({ path: 'path.workspaceId' })]);
    });

    it('refuses a body that is not JSON with 415', async () => {
      const res = await stack.http
        .post(`${ws()}/deployments`)
        .set(stack.auth)
        .set('Content-Type', 'text/plain')
        .send('name=x')
        .expect(415);
      expect(res.body.code).toBe('unsupported_media_type');
    });

    it('refuses malformed JSON with 400', async () => {
      const res = await stack.http
        .post(`${ws()}/deployments`)
        .set(stack.auth)
        .set('Content-Type', 'application/json')
        .send('{"name": ')
        .expect(400);
      expect(res.body.detail).toMatch(/not valid JSON/);
    });

    it('refuses a body over the limit with 413', async () => {
      const res = await stack.http
        .post(`${ws()}/deployments`)
        .set(stack.auth)
        .send({ name: 'big', slug: 'big', description: 'x'.repeat(4096) })
        .expect(413);
      expect(res.body.code).toBe('payload_too_large');
    });

    it('answers unknown routes and methods with problem+json', async () => {
      const missing = await stack.http.get('/v1/nothing-here').set(stack.auth).expect(404);
      expect(missing.headers['content-type']).toMatch(/problem\+json/);
      const method = await stack.http.delete('/healthz').expect(405);
      expect(method.body.code).toBe('method_not_allowed');
    });

    it('echoes a sane request id and invents one otherwise', async () => {
      const kept = await stack.http.get('/healthz').set('X-Request-Id', 'abc-123').expect(200);
      expect(kept.headers['x-request-id']).toBe('abc-123');
      const replaced = await stack.http.get('/healthz').set('X-Request-Id', 'bad id with spaces').expect(200);
      expect(replaced.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    });
  });

  describe('metrics and documentation', () => {
    it('exposes latency histograms labelled by route template', async () => {
      await stack.http.get(ws()).set(stack.auth).expect(200);
      const res = await supertest(stack.app.metricsApp.callback()).get('/metrics').expect(200);
      expect(res.text).toMatch(
        /flightdeck_http_request_duration_seconds_count\{method="GET",route="\/v1\/workspaces\/:workspaceId",status="200"\} [1-9]/,
      );
      expect(res.text).toContain('flightdeck_process_cpu_seconds_total');
    });

    it('serves a valid OpenAPI 3.1 document listing the routes', async () => {
      const res = await stack.http.get('/openapi.json').expect(200);
      const result = await new Validator().validate(res.body);
      expect(result.errors).toBeUndefined();
      expect(result.valid).toBe(true);
      expect(res.body.openapi).toBe('3.1.0');
      for (const route of stack.app.routes) {
        const documented = route.root ? route.path : `/v1${route.path}`;
        expect(res.body.paths[documented]?.[route.method]).toBeDefined();
      }
    });

    it('serves the docs page and its assets locally', async () => {
      const page = await stack.http.get('/docs').expect(200);
      expect(page.text).toContain('/docs/swagger-ui-bundle.js');
      expect(page.text).not.toMatch(/https?:\/\//);
      const bundle = await stack.http.get('/docs/swagger-ui-bundle.js').expect(200);
      expect(bundle.headers['content-type']).toMatch(/javascript/);
      await stack.http.get('/docs/..%2Fpackage.json').expect(404);
    });
  });
});
