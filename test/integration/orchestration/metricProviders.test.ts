import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { recordsApi } from '../../helpers/orchestration';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * Ctrlplane's metric providers (docs/api.md "Releases and jobs", Verification) measured for real, against a
 * fake Prometheus (with an OAuth2 token endpoint) and a fake Terraform Cloud: their requests, their results
 * under CEL, and their credentials sealed at rest.
 */
describe('verification metric providers', () => {
  let stack: TestStack;
  let api: ReturnType<typeof recordsApi>;
  let server: http.Server;
  let base: string;
  const seen: { path: string; authorization?: string; body: string }[] = [];

  beforeAll(async () => {
    stack = await startTestStack();
    api = recordsApi(stack);
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        const url = new URL(req.url!, 'http://fake');
        seen.push({ path: url.pathname, authorization: req.headers.authorization, body });
        const json = (status: number, payload: object) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(payload));
        };
        if (url.pathname === '/oauth/token')
          return body.includes('client_secret=oauth-secret')
            ? json(200, { access_token: 'minted-token', token_type: 'Bearer' })
            : json(401, { error: 'invalid_client' });
        if (url.pathname === '/api/v1/query') {
          if (req.headers.authorization !== 'Bearer minted-token') return json(401, { status: 'error' });
          return json(200, {
            status: 'success',
            data: { resultType: 'vector', result: [{ metric: {}, value: [1700000000, '0.002'] }] },
          });
        }
        if (url.pathname === '/api/v2/runs/run-abc123') {
          if (req.headers.authorization !== 'Bearer tfc-secret-token') return json(401, {});
          return json(200, { data: { id: 'run-abc123', attributes: { status: 'applied' } } });
        }
        json(404, {});
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await stack.close();
    await new Promise((resolve) => server.close(resolve));
  });

  it('measures prometheus (OAuth2) and terraformCloudRun metrics and succeeds the release on their results', async () => {
    await api.agent('metrics-runner', 'test-runner', { status: 'successful' });
    const system = await api.system('metrics');
    await api.environment('metrics', 'resource.metadata["lane"] == "metrics"', system);
    const deployment = await api.deployment('metrics', system, { jobAgents: [{ ref: 'metrics-runner' }] });
    const resource = await api.resource('metrics-0', 'service', { lane: 'metrics' });
    const policyId = await api.policy({
      name: 'provider checks',
      selector: 'deployment.slug == "metrics"',
      rules: [
        {
          verification: {
            metrics: [
              {
                name: 'error-rate',
                intervalSeconds: 1,
                count: 1,
                provider: {
                  type: 'prometheus',
                  address: base,
                  query: 'sum(rate(errors[5m]))',
                  authentication: {
                    oauth2: {
                      tokenUrl: `${base}/oauth/token`,
                      clientId: 'flightdeck',
                      clientSecret: 'oauth-secret',
                    },
                  },
                },
                successCondition: 'result.value < 0.01',
              },
              {
                name: 'infra-run',
                intervalSeconds: 1,
                count: 1,
                provider: {
                  type: 'terraformCloudRun',
                  address: base,
                  token: 'tfc-secret-token',
                  runId: 'run-abc123',
                },
                successCondition: 'result.status == "applied"',
              },
            ],
          },
        },
      ],
    });
    await api.version(deployment, '1.0.0');
    const release = await api.releaseWith(
      (r) => r.resourceId === resource && ['succeeded', 'failed'].includes(r.phase),
      'the verified release to end',
    );
    expect(release.phase).toBe('succeeded');
    expect(seen.map((request) => request.path)).toEqual(
      expect.arrayContaining(['/oauth/token', '/api/v1/query', '/api/v2/runs/run-abc123']),
    );
    const query = seen.find((request) => request.path === '/api/v1/query')!;
    expect(query.authorization).toBe('Bearer minted-token');

    const policy = await api.get<{
      rules: { verification: { metrics: { provider: Record<string, unknown> }[] } }[];
    }>(`/policies/${policyId}`);
    const [prometheus, tfc] = policy.rules[0]!.verification.metrics.map((metric) => metric.provider);
    expect(prometheus).toMatchObject({
      authentication: { oauth2: { clientId: 'flightdeck', clientSecret: { sensitive: true } } },
    });
    expect(tfc).toMatchObject({ token: { sensitive: true }, runId: 'run-abc123' });
    const stored = await stack.orm.em
      .fork()
      .getConnection()
      .execute<{ text: string }[]>(
        `SELECT (SELECT string_agg(rules::text, '') FROM policy) || (SELECT string_agg(metrics::text, '') FROM job_verification) AS text`,
      );
    expect(stored[0]!.text).not.toContain('oauth-secret');
    expect(stored[0]!.text).not.toContain('tfc-secret-token');
  });

  it('measures with a credential referenced from a workspace secret, answered as written', async () => {
    const put = await stack.http
      .put(`/v1/workspaces/${stack.workspaceId}/secrets/tfc-token`)
      .set(stack.auth)
      .send({ value: 'tfc-secret-token' });
    expect(put.status).toBe(201);
    await api.agent('referenced-runner', 'test-runner', { status: 'successful' });
    const system = await api.system('referenced');
    await api.environment('referenced', 'resource.metadata["lane"] == "referenced"', system);
    const deployment = await api.deployment('referenced', system, {
      jobAgents: [{ ref: 'referenced-runner' }],
    });
    const resource = await api.resource('referenced-0', 'service', { lane: 'referenced' });
    const provider = {
      type: 'terraformCloudRun',
      address: base,
      token: 'secret://tfc-token',
      runId: 'run-abc123',
    };
    const policyId = await api.policy({
      name: 'referenced checks',
      selector: 'deployment.slug == "referenced"',
      rules: [
        {
          verification: {
            metrics: [
              {
                name: 'infra-run',
                intervalSeconds: 1,
                count: 1,
                provider,
                successCondition: 'result.status == "applied"',
              },
            ],
          },
        },
      ],
    });
    const before = seen.length;
    await api.version(deployment, '1.0.0');
    const release = await api.releaseWith(
      (r) => r.resourceId === resource && ['succeeded', 'failed'].includes(r.phase),
      'the release verified with a referenced credential to end',
    );
    expect(release.phase).toBe('succeeded');
    expect(seen.slice(before).map((request) => request.authorization)).toContain('Bearer tfc-secret-token');
    const policy = await api.get<{
      rules: { verification: { metrics: { provider: Record<string, unknown> }[] } }[];
    }>(`/policies/${policyId}`);
    expect(policy.rules[0]!.verification.metrics[0]!.provider).toEqual(provider);
    const stored = await stack.orm.em
      .fork()
      .getConnection()
      .execute<{ text: string }[]>(
        `SELECT (SELECT string_agg(value, '') FROM workspace_secret) || (SELECT string_agg(metrics::text, '') FROM job_verification) AS text`,
      );
    expect(stored[0]!.text).not.toContain('tfc-secret-token');
  });

  it('refuses providers it cannot honour, and bad shapes, writing nothing', async () => {
    for (const provider of [
      { type: 'prometheus', address: base, query: 'up', insecure: true },
      { type: 'terraformCloudRun', address: base, token: 't', runId: '../../admin' },
      { type: 'datadog', apiKey: 'k', appKey: 'a', queries: {}, site: 'evil.example.org' },
    ]) {
      const res = await stack.http
        .post(`${api.ws}/policies`)
        .set(stack.auth)
        .send({
          name: 'refused',
          rules: [
            {
              verification: {
                metrics: [{ name: 'm', intervalSeconds: 1, count: 1, provider, successCondition: 'true' }],
              },
            },
          ],
        });
      expect(res.status).toBe(400);
    }
    const policies = await api.get<{ items: { name: string }[] }>('/policies');
    expect(policies.items.map((policy) => policy.name)).not.toContain('refused');
  });
});
