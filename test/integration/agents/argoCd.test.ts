import { FakeArgoCd } from '../../fakes/argoCd';
import { eventually } from '../../helpers/eventually';
import { recordsApi } from '../../helpers/orchestration';
import { pushAgents } from '../../helpers/push';
import { capturedLogger, startTestStack, type TestStack } from '../../helpers/stack';

/**
 * docs/behaviour.md "Job agent entry" (GitOps sync): the argo-cd agent renders an Application from its template
 * with the release, creates or updates it, syncs it, and follows sync and health, end to end
 * through the API and the release workflow against a fake Argo CD.
 */
describe('the Argo CD agent', () => {
  const API_KEY = 'argocd-api-key-for-tests';
  const SECRET = 'registry-token-never-logged-91c2';
  let logs: () => string;
  const TEMPLATE = `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: "{{ deployment.slug }}-{{ resource.identifier }}"
  namespace: argocd
  labels:
    flightdeck.dev/job: "{{ job.id }}"
spec:
  project: default
  source:
    repoURL: https://git.example/deploys.git
    path: "apps/{{ deployment.slug }}"
    targetRevision: "v{{ version.tag }}"
    helm:
      parameters:
        - name: replicas
          value: "{{ variables.REPLICAS }}"
        - name: environment
          value: "{{ environment.name }}"
        - name: registryToken
          value: "{{ variables.REGISTRY_TOKEN }}"
  destination:
    server: https://kubernetes.default.svc
    namespace: "{{ resource.metadata.namespace }}"
`;
  let stack: TestStack;
  let argo: FakeArgoCd;
  let agents: ReturnType<typeof pushAgents>;

  beforeAll(async () => {
    const captured = capturedLogger();
    logs = captured.text;
    stack = await startTestStack({ logger: captured.logger });
    argo = await new FakeArgoCd(API_KEY).start();
    agents = pushAgents(stack, await recordsApi(stack).system('Argo'));
  });
  afterAll(async () => {
    await argo.close();
    await stack.close();
  });

  const deploy = (name: string, config: object = {}) =>
    agents.deploy(
      name,
      'argo-cd',
      { template: TEMPLATE, server_url: argo.url, api_key: API_KEY, ...config },
      {
        metadata: { namespace: `ns-${name}` },
        variables: { REPLICAS: 3, REGISTRY_TOKEN: { secret: SECRET } },
      },
    );
  /** The agent's Application once its sync has started. */
  const applicationOf = (name: string) =>
    eventually(
      () => {
        const app = argo.applications.get(`svc-${name}-${name}-node`);
        return app?.status.operationState ? app : undefined;
      },
      { what: 'the synced application' },
    );

  it('creates the rendered Application, syncs it, and follows it to Synced + Healthy', async () => {
    const { job } = await deploy('argo-ok');
    const app = await applicationOf('argo-ok');
    const [upsert] = argo.requestsTo('/api/v1/applications?upsert=true');
    expect(upsert).toMatchObject({ method: 'POST', authorization: `Bearer ${API_KEY}` });
    expect(upsert!.body).toEqual({
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Application',
      metadata: {
        name: 'svc-argo-ok-argo-ok-node',
        namespace: 'argocd',
        labels: { 'flightdeck.dev/job': job.id },
      },
      spec: {
        project: 'default',
        source: {
          repoURL: 'https://git.example/deploys.git',
          path: 'apps/svc-argo-ok',
          targetRevision: 'v1.0.0',
          helm: {
            parameters: [
              { name: 'replicas', value: '3' },
              { name: 'environment', value: 'env-argo-ok' },
              { name: 'registryToken', value: SECRET },
            ],
          },
        },
        destination: { server: 'https://kubernetes.default.svc', namespace: 'ns-argo-ok' },
      },
    });
    expect(argo.requestsTo(`/api/v1/applications/${app.metadata.name}/sync`)).toHaveLength(1);
    const triggered = await agents.waitForJob(
      job.id,
      (current) => current.externalId !== undefined,
      'the link',
    );
    expect(triggered).toMatchObject({ status: 'triggered', externalId: app.metadata.name });

    await agents.waitForJob(job.id, (current) => current.status === 'in_progress', 'the sync running');
    argo.settle(app.metadata.name, 'Succeeded', 'Synced', 'Healthy');
    const done = await agents.waitForJob(job.id, (current) => current.status === 'successful', 'success');
    expect(done.message).toContain('Synced, Healthy');
    expect(await agents.releaseEnds(job, 'succeeded')).toBe(job.releaseId);
    // The sensitive variable went into the Application, and into no log line.
    expect(JSON.stringify(upsert!.body)).toContain(SECRET);
    expect(logs().length).toBeGreaterThan(0);
    expect(logs()).not.toContain(SECRET);
  }, 90_000);

  it('fails the job with the reason when the application turns Degraded', async () => {
    const { job } = await deploy('argo-degraded');
    const app = await applicationOf('argo-degraded');
    argo.settle(
      app.metadata.name,
      'Succeeded',
      'Synced',
      'Degraded',
      'Deployment web exceeded its progress deadline',
    );
    const failed = await agents.waitForJob(job.id, (current) => current.status === 'failure', 'the failure');
    expect(failed.message).toContain('exceeded its progress deadline');
    expect(await agents.releaseEnds(job, 'failed')).toBeNull();
  }, 90_000);

  it('retries after a 500 from Argo CD, and ends invalid_integration on a 401 with its message', async () => {
    argo.failNext('upsert', 500);
    const { job } = await deploy('argo-retry');
    await applicationOf('argo-retry');
    expect(
      argo
        .requestsTo('/api/v1/applications?upsert=true')
        .filter(
          (r) =>
            (r.body as { metadata: { name: string } }).metadata.name === 'svc-argo-retry-argo-retry-node',
        ),
    ).toHaveLength(2);
    // Only the step that failed ran again: one sync.
    expect(argo.requestsTo('/api/v1/applications/svc-argo-retry-argo-retry-node/sync')).toHaveLength(1);
    const linked = await agents.waitForJob(job.id, (current) => current.externalId !== undefined, 'the link');
    expect(linked.externalId).toBe('svc-argo-retry-argo-retry-node');

    const refused = await deploy('argo-refused', { api_key: 'wrong-key' });
    const ended = await agents.waitForJob(
      refused.job.id,
      (current) => current.status === 'invalid_integration',
      'the refusal',
    );
    expect(ended.message).toMatch(/answered 401: invalid session: token is invalid/);
    expect(ended.message).not.toContain('wrong-key');
  }, 90_000);

  // A sync retried after a lost answer (a worker crash) finds its own sync running
  // (docs/agents.md "Argo CD (`argo-cd`)").
  it('follows its own sync when the retried sync step finds it already running', async () => {
    argo.loseNextAnswers('sync');
    const { job } = await deploy('argo-crash');
    const name = 'svc-argo-crash-argo-crash-node';
    const dispatched = await agents.waitForJob(
      job.id,
      (current) => current.status !== 'pending',
      'the dispatch',
    );
    expect(dispatched).toMatchObject({
      status: 'triggered',
      externalId: name,
      message: `Argo CD application ${name}: its sync is running`,
    });
    expect(argo.requestsTo(`/api/v1/applications/${name}/sync`)).toHaveLength(2);
    argo.settle(name, 'Succeeded', 'Synced', 'Healthy');
    await agents.waitForJob(job.id, (current) => current.status === 'successful', 'success');
  }, 90_000);

  it('waits for an operation older than the job to end, then syncs', async () => {
    const name = 'svc-argo-busy-argo-busy-node';
    const startedAt = new Date(Date.now() - 3_600_000).toISOString();
    argo.applications.set(name, {
      metadata: { name },
      spec: {},
      status: {
        sync: { status: 'OutOfSync' },
        health: { status: 'Progressing' },
        operationState: { phase: 'Running', startedAt },
      },
    });
    const { job } = await deploy('argo-busy');
    await eventually(
      async () =>
        argo.requestsTo(`/api/v1/applications/${name}/sync`).length >= 2 ||
        (await agents.jobOf(job.id)).status !== 'pending',
      { what: 'the refused sync to be tried again', timeoutMs: 30_000 },
    );
    expect((await agents.jobOf(job.id)).status).toBe('pending');
    argo.settle(name, 'Succeeded', 'Synced', 'Healthy');
    const linked = await agents.waitForJob(job.id, (current) => current.externalId !== undefined, 'the link');
    expect(linked.message).toBe(`Argo CD application ${name}: sync requested`);
    expect(argo.applications.get(name)!.status.operationState!.startedAt).not.toBe(startedAt);
    argo.settle(name, 'Succeeded', 'Synced', 'Healthy');
    await agents.waitForJob(job.id, (current) => current.status === 'successful', 'success');
  }, 90_000);

  it('ends the job invalid_job_agent when the template refers to something the release lacks', async () => {
    const { job } = await deploy('argo-bad-template', {
      template: 'metadata:\n  name: "{{ resource.metadata.missing }}"\nspec: {}\n',
    });
    const ended = await agents.waitForJob(
      job.id,
      (current) => current.status === 'invalid_job_agent',
      'the job to end',
    );
    expect(ended.message).toContain('{{ resource.metadata.missing }}');
  });

  it('terminates the running sync when the release is cancelled', async () => {
    const { job } = await deploy('argo-cancel');
    const app = await applicationOf('argo-cancel');
    await agents.api.send('post', `/releases/${job.releaseId}/cancel`, {}, [202]);
    await eventually(
      () => argo.requestsTo(`/api/v1/applications/${app.metadata.name}/operation`).length === 1,
      {
        what: 'the sync to be terminated',
      },
    );
    expect(app.status.operationState).toMatchObject({ phase: 'Failed', message: 'Operation terminated' });
    expect((await agents.jobOf(job.id)).status).toBe('cancelled');
  }, 90_000);
});
