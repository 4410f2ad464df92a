import { randomUUID } from 'node:crypto';
import { FakeArgoCd } from '../../fakes/argoCd';
import { eventually } from '../../helpers/eventually';
import { recordsApi, type Job } from '../../helpers/orchestration';
import { expectNothingWritten, expectProblem } from '../../helpers/records';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * A stored credential stays bound to where it was stored (docs/security.md "Credential binding").
 * Keeping an agent's secret with `{"sensitive": true}` while its endpoint or type changes, or a metric
 * provider's while its type or an address it calls changes, is refused (409 `credential_destination_changed`)
 * and changes nothing; sending the credential itself moves it. A template, whoever wrote it (a version, a
 * deployment entry), never renders the agent's credentials.
 */
describe('credentials stay bound to where they were stored', () => {
  let stack: TestStack;
  const KEEP = { sensitive: true };
  const ws = () => `/v1/workspaces/${stack.workspaceId}`;

  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(() => stack.close());

  async function storedAgent(id: string): Promise<{ type: string; config: Record<string, unknown> }> {
    const [row] = await stack.orm.em
      .fork()
      .getConnection()
      .execute<{ type: string; config: Record<string, unknown> }[]>(
        'SELECT type, config FROM job_agent WHERE id = ?',
        [id],
      );
    return row!;
  }
  const openAgentSecret = (id: string, sealed: unknown) =>
    stack.secrets.forRecord(stack.workspaceId, 'job_agent', id).open(sealed as string);

  const putAgent = (id: string, type: string, config: object) =>
    stack.http
      .put(`${ws()}/job-agents/${id}`)
      .set(stack.auth)
      .send({ name: `bound-${id}`, type, config });

  function expectMovedCredentialRefused(
    res: { status: number; body: Record<string, unknown> },
    paths: string[],
  ) {
    expectProblem(res as never, 409, 'credential_destination_changed');
    expect(res.body.detail).toMatch(/resend the credential/);
    expect(res.body.errors).toEqual(
      paths.map((path) => ({ path, message: expect.stringContaining('send the credential itself') })),
    );
  }

  const agentCases: { type: string; secret: string; endpoint: string; config: Record<string, unknown> }[] = [
    {
      type: 'github-app',
      secret: 'token',
      endpoint: 'base_url',
      config: { owner: 'acme', repo: 'deploys', workflow_id: 7, base_url: 'https://ghe.example.com/api/v3' },
    },
    {
      type: 'argo-cd',
      secret: 'api_key',
      endpoint: 'server_url',
      config: { server_url: 'https://argo.example.com', template: 'kind: Application' },
    },
    {
      type: 'tfe',
      secret: 'token',
      endpoint: 'address',
      config: { organization: 'acme', address: 'https://tfe.example.com' },
    },
  ];

  it.each(agentCases)(
    "refuses to keep a $type agent's $secret while its $endpoint changes or goes back to the default",
    async ({ type, secret, endpoint, config }) => {
      const id = randomUUID();
      const stored = `${type}-stored-credential`;
      await putAgent(id, type, { ...config, [secret]: stored }).expect(202);
      const kept = { ...config, [secret]: KEEP };
      // The same endpoint, written with a trailing slash, keeps the credential.
      const sameEndpoint = `${String(config[endpoint])}/`;
      await putAgent(id, type, { ...kept, [endpoint]: sameEndpoint }).expect(202);

      const { [endpoint]: _omitted, ...defaultEndpoint } = kept;
      for (const moved of [{ ...kept, [endpoint]: 'https://attacker.example' }, defaultEndpoint]) {
        const res = await expectNothingWritten(stack, ['job_agent'], () => putAgent(id, type, moved));
        expectMovedCredentialRefused(res, [`body.config.${secret}`]);
      }
      const after = await storedAgent(id);
      expect(after.config[endpoint]).toBe(sameEndpoint);
      expect(openAgentSecret(id, after.config[secret])).toBe(stored);

      // Sending the credential itself moves it.
      await putAgent(id, type, { ...config, [endpoint]: 'https://moved.example', [secret]: 'resent' }).expect(
        202,
      );
      const moved = await storedAgent(id);
      expect(moved.config[endpoint]).toBe('https://moved.example');
      expect(openAgentSecret(id, moved.config[secret])).toBe('resent');
    },
  );

  it("refuses to keep an agent's credential while its type changes", async () => {
    const id = randomUUID();
    await putAgent(id, 'github-app', {
      owner: 'acme',
      repo: 'deploys',
      workflow_id: 7,
      token: 'gh-token',
    }).expect(202);
    const res = await expectNothingWritten(stack, ['job_agent'], () =>
      putAgent(id, 'tfe', { organization: 'acme', token: KEEP }),
    );
    expectMovedCredentialRefused(res, ['body.config.token']);
    const after = await storedAgent(id);
    expect(after.type).toBe('github-app');
    expect(openAgentSecret(id, after.config.token)).toBe('gh-token');
  });

  it("refuses to keep a metric provider's credential while its type or an address it calls changes", async () => {
    const providers = {
      http: {
        type: 'http',
        url: 'https://probe.example.com/health?service=web',
        headers: { Authorization: 'Bearer probe-secret' },
      },
      prometheus: {
        type: 'prometheus',
        address: 'https://prometheus.example.com',
        query: 'up',
        authentication: {
          oauth2: { tokenUrl: 'https://idp.example.com/token', clientId: 'fd', clientSecret: 'oauth-secret' },
        },
      },
      prometheusBearer: {
        type: 'prometheus',
        address: 'https://prometheus.example.com',
        query: 'up',
        authentication: { bearerToken: 'bearer-secret' },
      },
      datadog: {
        type: 'datadog',
        site: 'datadoghq.eu',
        apiKey: 'dd-api',
        appKey: 'dd-app',
        queries: { a: 'avg:x' },
      },
      terraformCloudRun: {
        type: 'terraformCloudRun',
        address: 'https://tfe.example.com',
        token: 'tfc-secret',
        runId: 'run-abc123',
      },
    };
    const ruleId = randomUUID();
    const policyId = randomUUID();
    const metric = (name: string, provider: object) => ({
      name,
      intervalSeconds: 60,
      count: 1,
      provider,
      successCondition: 'true',
    });
    const policy = (metrics: object[]) => ({
      name: 'bound providers',
      selector: 'false',
      rules: [{ id: ruleId, verification: { metrics } }],
    });
    const putPolicy = (metrics: object[]) =>
      stack.http.put(`${ws()}/policies/${policyId}`).set(stack.auth).send(policy(metrics));
    const names = Object.keys(providers) as (keyof typeof providers)[];
    await putPolicy(names.map((name) => metric(name, providers[name]))).expect(202);
    const shown = (await stack.http.get(`${ws()}/policies/${policyId}`).set(stack.auth).expect(200)).body as {
      rules: { verification: { metrics: { provider: Record<string, unknown> }[] } }[];
    };
    const kept = shown.rules[0]!.verification.metrics.map((entry) => entry.provider);
    // Written back as shown, every credential is kept.
    await putPolicy(names.map((name, index) => metric(name, kept[index]!))).expect(202);

    const at = (index: number, slot: string) =>
      `body.rules[0].verification.metrics[${index}].provider.${slot}`;
    const moves: [number, (provider: Record<string, unknown>) => object, string[]][] = [
      [
        0,
        (p) => ({ ...p, url: 'https://attacker.example/health?service=web' }),
        [at(0, 'headers.Authorization')],
      ],
      [
        1,
        (p) => ({ ...p, address: 'https://attacker.example' }),
        [at(1, 'authentication.oauth2.clientSecret')],
      ],
      [
        1,
        (p) => ({
          ...p,
          authentication: {
            oauth2: {
              ...(p.authentication as { oauth2: object }).oauth2,
              tokenUrl: 'https://attacker.example/t',
            },
          },
        }),
        [at(1, 'authentication.oauth2.clientSecret')],
      ],
      [2, (p) => ({ ...p, address: 'https://attacker.example' }), [at(2, 'authentication.bearerToken')]],
      [3, (p) => ({ ...p, site: 'datadoghq.com' }), [at(3, 'apiKey'), at(3, 'appKey')]],
      [4, (p) => ({ ...p, address: 'https://attacker.example' }), [at(4, 'token')]],
    ];
    for (const [index, move, paths] of moves) {
      const metrics = names.map((name, i) => metric(name, i === index ? move(kept[i]!) : kept[i]!));
      const res = await expectNothingWritten(stack, ['policy'], () => putPolicy(metrics));
      expectMovedCredentialRefused(res, paths);
    }

    // Resent, the credential goes to the new address.
    const resent = names.map((name, i) =>
      metric(name, i === 4 ? { ...providers.terraformCloudRun, address: 'https://moved.example' } : kept[i]!),
    );
    await putPolicy(resent).expect(202);
  });

  it('never renders an agent credential into a template, whether a version or a deployment entry wrote it', async () => {
    const API_KEY = 'argo-bound-api-key';
    const argo = await new FakeArgoCd(API_KEY).start();
    try {
      const api = recordsApi(stack);
      const leaking = (name: string) =>
        `metadata:\n  name: ${name}\n  annotations:\n    leak: "{{ jobAgentConfig.api_key }}"\nspec:\n  project: default\n`;
      await api.agent('argo-bound', 'argo-cd', {
        server_url: argo.url,
        api_key: API_KEY,
        template: 'metadata:\n  name: "{{ deployment.slug }}"\nspec:\n  project: default\n',
      });
      const system = await api.system('Bound templates');
      await api.environment('env-bound', 'resource.metadata["lane"] == "bound"', system);
      const fromVersion = await api.deployment('svc-bound-version', system, {
        jobAgents: [{ ref: 'argo-bound' }],
      });
      const fromEntry = await api.deployment('svc-bound-entry', system, {
        jobAgents: [{ ref: 'argo-bound', config: { template: leaking('from-entry') } }],
      });
      await api.resource('bound-node', 'service', { lane: 'bound' });
      await api.version(fromVersion, '1.0.0', { jobAgentConfig: { template: leaking('from-version') } });
      await api.version(fromEntry, '1.0.0');

      for (const deploymentId of [fromVersion, fromEntry]) {
        const job = await eventually(
          async () => {
            const [found] = await api.jobs(`&deploymentId=${deploymentId}`);
            return found && found.status !== 'pending' ? found : undefined;
          },
          { what: 'the job to be dispatched', timeoutMs: 60_000 },
        );
        expect(job as Job).toMatchObject({ status: 'invalid_job_agent' });
        expect(job.message).toContain('{{ jobAgentConfig.api_key }}');
        expect(job.message).toContain('templates never render');
      }
      expect(argo.requestsTo('/api/v1/applications?upsert=true')).toHaveLength(0);
    } finally {
      await argo.close();
    }
  });
});
