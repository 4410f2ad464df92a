import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { eventually } from '../../helpers/eventually';
import { recordsApi } from '../../helpers/orchestration';
import { startTestStack, type TestStack } from '../../helpers/stack';

interface Plan {
  id: string;
  summary: { total: number; changed: number; unchanged: number; errored: number };
  targets: {
    resourceName: string;
    hasChanges: boolean;
    results: {
      hasChanges: boolean;
      current: string;
      proposed: string;
      message: string;
      contentHash: string;
    }[];
  }[];
}

/**
 * Deployment plans (docs/api.md "Records, selectors and release targets") — what a proposed version's jobs
 * would be given on each target, against the jobs of the current release there, secrets redacted, nothing
 * created; kept for GET.
 */
describe('deployment plans', () => {
  let stack: TestStack;
  let api: ReturnType<typeof recordsApi>;
  let deployment: string;
  let path: string;

  beforeAll(async () => {
    stack = await startTestStack();
    api = recordsApi(stack);
    await api.agent('plan-runner', 'test-runner', { status: 'successful', delaySeconds: 0 });
    const system = await api.system('Plans');
    await api.environment('plan-prod', 'resource.metadata["pool"] == "plans"', system);
    deployment = await api.deployment('plan-svc', system, {
      jobAgents: [{ ref: 'plan-runner', config: { image: 'svc' } }],
    });
    const tag = randomUUID();
    await api.send('put', `/deployments/${deployment}/variables/${tag}`, { key: 'TAG' }, [202]);
    await api.send(
      'put',
      `/deployments/${deployment}/variables/${tag}/values/${randomUUID()}`,
      { priority: 0, reference_value: { reference: 'version', path: ['tag'] } },
      [202],
    );
    await api.send(
      'put',
      `/deployments/${deployment}/variables/${randomUUID()}`,
      { key: 'TOKEN', default_value: 'plan-secret-value', sensitive: true },
      [202],
    );
    await api.resource('plan-node-1', 'service', { pool: 'plans' });
    await api.resource('plan-node-2', 'service', { pool: 'plans' });
    const version = await api.version(deployment, 'v1');
    await eventually(
      async () => {
        const releases = await api.get<{ items: { versionId: string; phase: string }[] }>(
          `/releases?deploymentId=${deployment}`,
        );
        return releases.items.filter((r) => r.versionId === version && r.phase === 'succeeded').length === 2;
      },
      { what: 'v1 to succeed on both nodes', timeoutMs: 30_000 },
    );
    await api.resource('plan-node-3', 'service', { pool: 'other-pool' });
    path = `${api.ws}/deployments/${deployment}/plan`;
  });
  afterAll(() => stack.close());

  const counts = async () =>
    (stack.orm.em.fork() as EntityManager).execute<{ versions: number; releases: number; jobs: number }[]>(
      `SELECT (SELECT count(*)::int FROM deployment_version) AS versions, (SELECT count(*)::int FROM release) AS releases,
              (SELECT count(*)::int FROM job) AS jobs`,
    );
  const plan = async (body: object) =>
    (await stack.http.post(path).set(stack.auth).send(body).expect(200)).body as Plan;

  it('shows no change for the version that runs, and what a new version changes, secrets redacted', async () => {
    const before = await counts();
    const same = await plan({ version: { tag: 'v1' } });
    expect(same.summary).toMatchObject({ total: 2, changed: 0, unchanged: 2, errored: 0 });
    expect(same.targets.every((target) => !target.hasChanges)).toBe(true);

    const next = await plan({ version: { tag: 'v2' }, metadata: { pr: '42' } });
    expect(next.summary).toMatchObject({ total: 2, changed: 2, unchanged: 0 });
    const result = next.targets[0]!.results[0]!;
    expect(result.current).toContain('"TAG": "v1"');
    expect(result.proposed).toContain('"TAG": "v2"');
    expect(result.proposed).toContain('"TOKEN": {\n');
    expect(result.contentHash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(next)).not.toContain('plan-secret-value');
    expect(await counts()).toEqual(before);

    const kept = await stack.http.get(`${path}/${next.id}`).set(stack.auth).expect(200);
    expect(kept.body).toEqual(next);
  });

  it('shows a target without a current release as new', async () => {
    await api.resource('plan-node-4', 'service', { pool: 'plans' });
    const withNew = await plan({ version: { tag: 'v1' } });
    const fresh = withNew.targets.find((target) => target.resourceName === 'plan-node-4');
    expect(fresh?.results[0]).toMatchObject({ current: '', hasChanges: true, message: 'new on this target' });
  });

  it('refuses bad input and answers 404 for unknown deployments and plans', async () => {
    for (const body of [{}, { version: {} }, { version: { tag: 'v3' }, metadata: { a: 1 } }]) {
      const res = await stack.http.post(path).set(stack.auth).send(body);
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/problem\+json/);
    }
    await stack.http
      .post(`${api.ws}/deployments/${randomUUID()}/plan`)
      .set(stack.auth)
      .send({ version: { tag: 'v3' } })
      .expect(404);
    await stack.http.get(`${path}/${randomUUID()}`).set(stack.auth).expect(404);
  });
});
