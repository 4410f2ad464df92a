import { recordsApi } from '../../helpers/orchestration';
import { startTestStack, type TestStack } from '../../helpers/stack';

interface DryRun {
  matchedTargets: number;
  evaluatedTargets: number;
  rules: {
    index: number;
    kind: string;
    note?: string;
    counts: { passed: number; waiting: number; blocked: number };
    held: { releaseTargetKey: string; resource: { identifier: string }; state: string; reason: string }[];
  }[];
}

/**
 * A policy tried before it is saved: which targets it would hold now, and why, by rule
 * (docs/api.md "Why isn't a target on a version?").
 */
describe('policy dry-run', () => {
  let stack: TestStack;
  let api: ReturnType<typeof recordsApi>;

  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
    api = recordsApi(stack);
    const system = await api.system('dry');
    await api.environment('dr-prod', 'resource.metadata["env"] == "prod"', system);
    await api.environment('dr-staging', 'resource.metadata["env"] == "staging"', system);
    for (const name of ['p1', 'p2']) await api.resource(`dr-${name}`, 'service', { env: 'prod' });
    await api.resource('dr-s1', 'service', { env: 'staging' });
    const stable = await api.deployment('dr-stable', system);
    const edgy = await api.deployment('dr-edgy', system);
    await api.version(stable, '1.0.0');
    await api.version(edgy, '2.0.0-beta');
  });
  afterAll(() => stack.close());

  const dryRun = (body: object) => api.send('post', '/policies/dry-run', body, [200]) as Promise<DryRun>;

  it('says which targets each rule would hold now, and why, saving nothing', async () => {
    const result = await dryRun({
      name: 'prod guard',
      selector: 'environment.name == "dr-prod"',
      rules: [
        { anyApproval: { minApprovals: 1 } },
        { versionSelector: { selector: '!version.tag.contains("beta")' } },
        { retry: { maxRetries: 2 } },
      ],
    });
    expect(result).toMatchObject({ matchedTargets: 4, evaluatedTargets: 4 });
    const [approval, selector, retry] = result.rules;
    expect(approval).toMatchObject({ kind: 'anyApproval', counts: { passed: 0, waiting: 4, blocked: 0 } });
    expect(approval!.held.map((held) => held.reason)).toEqual(Array(4).fill('0 of 1 approvals'));
    expect(selector).toMatchObject({
      kind: 'versionSelector',
      counts: { passed: 2, waiting: 0, blocked: 2 },
    });
    expect(selector!.held.every((held) => held.state === 'blocked' && held.reason.includes('beta'))).toBe(
      true,
    );
    expect(retry).toMatchObject({
      kind: 'retry',
      note: expect.stringContaining('holds no release'),
      held: [],
    });
    expect((await api.get<{ total: number }>('/policies')).total).toBe(0);
  });

  it('refuses an invalid policy body like a create does', async () => {
    const res = await stack.http
      .post(`${api.ws}/policies/dry-run`)
      .set(stack.auth)
      .send({ name: 'bad', selector: 'environment.name ==', rules: [] });
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/problem\+json/);
  });
});
