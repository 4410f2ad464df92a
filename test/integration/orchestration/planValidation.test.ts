import { OpaEngine, findOpa } from '../../../cli/opa';
import { eventually } from '../../helpers/eventually';
import { recordsApi } from '../../helpers/orchestration';
import { startTestStack, type TestStack } from '../../helpers/stack';

const NO_RC = `package main

deny contains msg if {
  endswith(input.version.tag, "-rc")
  msg := sprintf("release candidates do not go to %s", [input.environment.name])
}
`;

const NO_DEBUG = `package main

deny contains msg if {
  some result in input.results
  contains(result.proposed, "debug")
  msg := "the plan turns debug on"
}
`;

/**
 * Ctrlplane's `planValidationOpa` rule (docs/api.md "Releases and jobs"), checked at write and enforced on
 * each release's plan.
 */
describe('plan validation (OPA)', () => {
  let stack: TestStack;
  let api: ReturnType<typeof recordsApi>;

  beforeAll(async () => {
    stack = await startTestStack();
    api = recordsApi(stack);
  });
  afterAll(() => stack.close());

  const policyBody = (rego: string, extra: object = {}) => ({
    name: 'plan checks',
    selector: 'deployment.slug == "validated"',
    rules: [{ planValidationOpa: { name: 'gate', rego } }],
    ...extra,
  });

  it('refuses Rego that does not compile, lacks deny, or calls a forbidden builtin; writes nothing', async () => {
    const refused = [
      ['package main\n\ndeny contains msg if {\n  input.x ==\n}\n', /line \d+/],
      ['package main\n\nallow := true\n', /no `deny` rule/],
      [
        'package main\n\ndeny contains msg if {\n  r := http.send({"method": "GET", "url": "http://169.254.169.254/"})\n  msg := r.body\n}\n',
        /http\.send/,
      ],
      [
        'package main\n\ndeny contains msg if {\n  msg := opa.runtime().env.FLIGHTDECK_SECRET_KEY\n}\n',
        /opa\.runtime/,
      ],
      ['deny contains "x" if { true }', /package/],
    ] as const;
    for (const [rego, message] of refused) {
      const res = await stack.http.post(`${api.ws}/policies`).set(stack.auth).send(policyBody(rego));
      expect(res.status).toBe(400);
      expect(JSON.stringify(res.body.errors)).toMatch(message);
    }
    expect((await api.get<{ items: unknown[] }>('/policies')).items).toHaveLength(0);
  });

  it('blocks a release whose plan the policy denies, and lets the others through', async () => {
    await api.agent('plan-runner', 'test-runner', { status: 'successful' });
    const system = await api.system('plans');
    const environment = await api.environment('prod', 'resource.metadata["lane"] == "plans"', system);
    const deployment = await api.deployment('validated', system, { jobAgents: [{ ref: 'plan-runner' }] });
    const resource = await api.resource('plans-0', 'service', { lane: 'plans' });
    await api.policy(policyBody(NO_RC));

    await api.version(deployment, '1.0.0');
    await api.releaseWith((r) => r.resourceId === resource && r.phase === 'succeeded', 'the 1.0.0 release');

    const rcVersion = await api.version(deployment, '1.1.0-rc');
    const blocked = await api.releaseWith(
      (r) => r.versionId === rcVersion && r.evaluation?.decision === 'blocked',
      'the rc release to be blocked',
    );
    expect(blocked.evaluation!.reason).toBe(
      'plan validation gate denies: release candidates do not go to prod',
    );
    expect(blocked.phase).toBe('pending');
    expect(await api.jobs(`&releaseId=${blocked.id}`)).toHaveLength(0);

    // Explain shows the verdicts the workflow recorded on the plan.
    const planRules = async () =>
      (
        await api.get<{ rules: { kind: string; state: string; reason: string }[] }>(
          `/release-targets/${resource}-${environment}-${deployment}/explain?versionId=${rcVersion}`,
        )
      ).rules.filter((rule) => rule.kind === 'planValidationOpa');
    const denied = {
      state: 'blocked',
      reason: 'plan validation gate denies: release candidates do not go to prod',
    };
    expect(await planRules()).toEqual([expect.objectContaining(denied)]);

    // Explain runs no policy itself (docs/security.md "OPA sandbox"): a rule the workflow has not
    // evaluated yet (the worker is stopped) is pending, though running it would pass.
    await stack.stopWorker();
    try {
      await api.policy({
        name: 'plan checks, later',
        selector: 'deployment.slug == "validated"',
        rules: [{ planValidationOpa: { name: 'debug-gate', rego: NO_DEBUG } }],
      });
      expect(await planRules()).toEqual(
        expect.arrayContaining([
          expect.objectContaining(denied),
          expect.objectContaining({
            state: 'waiting',
            reason: 'plan validation debug-gate is pending: no verdict on this plan yet',
          }),
        ]),
      );
    } finally {
      await stack.startWorker();
    }
    // The release looks again (the policy change woke it) and records the new rule's verdict.
    await eventually(
      async () =>
        (await planRules()).some(
          (rule) => rule.state === 'passed' && rule.reason === 'plan validation debug-gate passed',
        ),
      { what: 'the new rule to be evaluated' },
    );
  });

  it('evaluates the rendered plan: a configuration change the policy denies is held', async () => {
    await api.agent('plan-runner-2', 'test-runner', { status: 'successful' });
    const system = await api.system('plans-2');
    await api.environment('prod-2', 'resource.metadata["lane"] == "plans-2"', system);
    const deployment = await api.deployment('validated-2', system, { jobAgents: [{ ref: 'plan-runner-2' }] });
    await api.resource('plans-2-0', 'service', { lane: 'plans-2' });
    await api.policy({
      ...policyBody(NO_DEBUG),
      name: 'no debug',
      selector: 'deployment.slug == "validated-2"',
    });
    const quiet = await api.version(deployment, '2.0.0', { jobAgentConfig: { message: 'quiet' } });
    await api.releaseWith((r) => r.versionId === quiet && r.phase === 'succeeded', 'the quiet release');
    const loud = await api.version(deployment, '2.1.0', { jobAgentConfig: { message: 'debug on' } });
    const held = await api.releaseWith(
      (r) => r.versionId === loud && r.evaluation?.decision === 'blocked',
      'the debug release to be held',
    );
    expect(held.evaluation!.reason).toContain('the plan turns debug on');
  });

  it('runs a tenant policy in a bounded process: an endless one is stopped and reported', async () => {
    const engine = new OpaEngine(findOpa()).session(stack.workspaceId);
    const bomb = `package main

deny contains msg if {
  some x in numbers.range(1, 100000000000)
  msg := sprintf("%d", [x])
}
`;
    await expect(engine.deny(bomb, {})).rejects.toThrow(/memory|longer than|exited/);
    expect(await engine.deny(NO_RC, { version: { tag: '1.0.0' }, environment: { name: 'x' } })).toEqual([]);
  });
});
