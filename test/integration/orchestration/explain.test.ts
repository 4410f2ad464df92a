import { randomUUID } from 'node:crypto';
import { explainCommand } from '../../../cli/commands/explain';
import type { Explanation } from '../../../domain/explain';
import { dtstart, recordsApi } from '../../helpers/orchestration';
import { listenOnSocket, startTestStack, type TestStack } from '../../helpers/stack';

/**
 * "Why is this target (not) on this version?" (docs/api.md "Why isn't a target on a version?"), answered by
 * the gates' own code over the same facts the release workflow reads: its verdicts are the workflow's, rule
 * for rule.
 */
describe('explain a release target', () => {
  let stack: TestStack;
  let api: ReturnType<typeof recordsApi>;
  let server: Awaited<ReturnType<typeof listenOnSocket>>;
  let baseUrl: string;

  beforeAll(async () => {
    stack = await startTestStack();
    api = recordsApi(stack);
    await api.agent('explain-puller', 'http-pull');
    // The CLI and the browser speak HTTP: the stack's app on a real socket.
    server = await listenOnSocket(stack);
    baseUrl = server.url;
  });
  afterAll(async () => {
    await server?.close();
    await stack.close();
  });

  async function lane(label: string) {
    const system = await api.system(label);
    const environment = await api.environment(label, `resource.metadata["lane"] == "${label}"`, system);
    const resource = await api.resource(`${label}-node`, 'service', { lane: label });
    const deployment = await api.deployment(label, system, { jobAgents: [{ ref: 'explain-puller' }] });
    return { deployment, environment, resource, key: `${resource}-${environment}-${deployment}` };
  }

  const explain = async (key: string, versionId?: string) =>
    api.get<Explanation>(`/release-targets/${key}/explain${versionId ? `?versionId=${versionId}` : ''}`);

  it('agrees with the workflow on a release waiting for approval, and names who approved', async () => {
    const { deployment, environment, key } = await lane('ex-approve');
    await api.policy({
      name: 'ex approvals',
      selector: `environment.id == "${environment}"`,
      rules: [{ anyApproval: { minApprovals: 2 } }],
    });
    const version = await api.version(deployment, '1.0.0');
    const waiting = await api.releaseWith(
      (r) => r.versionId === version && r.evaluation?.decision === 'wait',
      'the release to wait for approvals',
    );
    await stack.http
      .post(`${api.ws}/releases/${waiting.id}/approve`)
      .set(stack.auth)
      .send({ reason: 'ok' })
      .expect(202);
    const recorded = await api.releaseWith(
      (r) => r.id === waiting.id && (r.evaluation?.reason ?? '').includes('1 of 2'),
      'the workflow to count the approval',
    );
    const explained = await explain(key);
    expect(explained).toMatchObject({
      version: { id: version, tag: '1.0.0' },
      release: { id: waiting.id, phase: 'pending' },
      decision: recorded.evaluation!.decision,
      reason: recorded.evaluation!.reason,
    });
    const strip = (rules: { kind: string; state: string; reason: string }[]) =>
      rules.map(({ kind, state, reason }) => ({ kind, state, reason }));
    expect(strip(explained.rules)).toEqual(strip(recorded.evaluation!.rules));
    expect(explained.rules.find((rule) => rule.kind === 'anyApproval')).toMatchObject({
      state: 'waiting',
      reason: '1 of 2 approvals',
      approvedBy: ['test'],
    });
    expect(explained.next).toContain('waits: 1 of 2 approvals');
  });

  it('shows what holds the slot: the running release, its job and agent; and a version the selector excludes', async () => {
    const { deployment, environment, key } = await lane('ex-slot');
    await api.policy({
      name: 'ex no betas',
      selector: `environment.id == "${environment}"`,
      rules: [{ versionSelector: { selector: '!version.tag.contains("beta")' } }],
    });
    const first = await api.version(deployment, '1.0.0');
    const [job] = await api.jobsSettleAt(1, `&deploymentId=${deployment}`);
    const agentId = (job as unknown as { jobAgentId: string }).jobAgentId;
    await stack.http
      .post(`${api.ws}/job-agents/${agentId}/jobs/${job!.id}/claim`)
      .set(stack.auth)
      .expect(200);
    const running = await explain(key, first);
    expect(running.release).toMatchObject({ phase: 'running' });
    expect(running.slot.activeRelease).toMatchObject({ versionTag: '1.0.0', phase: 'running' });
    expect(running.slot.activeJobs).toEqual([
      expect.objectContaining({
        id: job!.id,
        agent: expect.objectContaining({ name: 'explain-puller', type: 'http-pull' }),
      }),
    ]);
    expect(running.next).toContain(`release ${running.release!.id} is running: jobs ${job!.id}`);

    const second = await api.version(deployment, '1.1.0');
    const busy = await explain(key, second);
    expect(busy.rules.find((rule) => rule.kind === 'target')).toMatchObject({
      state: 'waiting',
      reason: `the target is busy with release ${running.release!.id}`,
    });

    const beta = await api.version(deployment, '1.2.0-beta');
    const excluded = await explain(key, beta);
    expect(excluded).toMatchObject({ decision: 'blocked' });
    expect(excluded.rules.find((rule) => rule.kind === 'versionSelector')).toMatchObject({
      state: 'blocked',
    });

    // The CLI prints the same as a table.
    const lines: string[] = [];
    const code = await explainCommand(
      { target: key, version: beta, api: baseUrl, key: stack.apiKey, workspace: stack.workspaceId },
      (line) => lines.push(line),
      (line) => lines.push(line),
    );
    expect(code).toBe(0);
    expect(lines.join('\n')).toMatch(/Decision: blocked/);
    expect(lines.join('\n')).toMatch(/✗\s+versionSelector\s+blocked/);
  });

  it('previews the variables a version would get, each with the source that won, against the running release', async () => {
    const { deployment, key } = await lane('ex-vars');
    const variable = async (name: string, body: object, values: object[]) => {
      const id = randomUUID();
      await api.send('put', `/deployments/${deployment}/variables/${id}`, { key: name, ...body }, [202]);
      const valueIds: string[] = [];
      for (const value of values) {
        const valueId = randomUUID();
        valueIds.push(valueId);
        await api.send('put', `/deployments/${deployment}/variables/${id}/values/${valueId}`, value, [202]);
      }
      return { id, valueIds };
    };
    const level = await variable('LOG_LEVEL', { default_value: 'info' }, [
      { priority: 10, value: 'debug', resource_selector: 'resource.metadata["lane"] == "ex-vars"' },
    ]);
    await variable('ENV_NAME', {}, [
      { priority: 0, reference_value: { reference: 'environment', path: ['name'] } },
    ]);
    await variable('API_TOKEN', { sensitive: true }, [{ priority: 0, value: 'top-secret' }]);
    await variable('REPLICAS', { default_value: 3 }, []);

    const first = await api.version(deployment, '1.0.0');
    const [job] = await api.jobsSettleAt(1, `&deploymentId=${deployment}`);
    const agentId = (job as unknown as { jobAgentId: string }).jobAgentId;
    await stack.http
      .post(`${api.ws}/job-agents/${agentId}/jobs/${job!.id}/claim`)
      .set(stack.auth)
      .expect(200);
    await api.report(job!.id, 'successful');
    await api.releaseWith((r) => r.versionId === first && r.phase === 'succeeded', 'the first release');

    // The value changes after the release ran: the preview shows the new winner and the change.
    await api.send(
      'put',
      `/deployments/${deployment}/variables/${level.id}/values/${level.valueIds[0]}`,
      { priority: 10, value: 'trace', resource_selector: 'resource.metadata["lane"] == "ex-vars"' },
      [202],
    );
    const preview = await api.get<{
      variables: Record<string, unknown>[];
      changes: { key: string; change: string }[];
    }>(`/release-targets/${key}/variables`);
    const byKey = new Map(preview.variables.map((variable) => [variable.key, variable]));
    expect(byKey.get('LOG_LEVEL')).toMatchObject({
      value: 'trace',
      source: 'value',
      valueId: level.valueIds[0],
      priority: 10,
      resourceSelector: 'resource.metadata["lane"] == "ex-vars"',
    });
    expect(byKey.get('ENV_NAME')).toMatchObject({
      value: 'ex-vars',
      source: 'value',
      reference: { reference: 'environment', path: ['name'] },
    });
    expect(byKey.get('API_TOKEN')).toMatchObject({ value: { sensitive: true }, sensitive: true });
    expect(byKey.get('REPLICAS')).toMatchObject({ value: 3, source: 'default' });
    expect(JSON.stringify(preview)).not.toContain('top-secret');
    expect(preview.changes).toEqual([
      { key: 'API_TOKEN', change: 'unchanged' },
      { key: 'ENV_NAME', change: 'unchanged' },
      { key: 'LOG_LEVEL', change: 'changed' },
      { key: 'REPLICAS', change: 'unchanged' },
    ]);
  });

  it('explains a deny window (until when), a progression (which environment, how far) and a cooldown', async () => {
    // A deny window open for the next hour.
    const windowed = await lane('ex-window');
    const now = Date.now();
    await api.policy({
      name: 'ex freeze',
      selector: `environment.id == "${windowed.environment}"`,
      rules: [
        {
          deploymentWindow: {
            rrule: `${dtstart(new Date(now - 60_000))}\nRRULE:FREQ=DAILY`,
            durationMinutes: 60,
            timezone: 'UTC',
            allowWindow: false,
          },
        },
      ],
    });
    const frozen = await api.version(windowed.deployment, '1.0.0');
    const inWindow = await explain(windowed.key, frozen);
    const windowRule = inWindow.rules.find((rule) => rule.kind === 'deploymentWindow')!;
    expect(windowRule).toMatchObject({
      state: 'waiting',
      reason: expect.stringMatching(/^inside a deny window until /),
    });
    expect(Date.parse(windowRule.nextEvaluationAt!)).toBeGreaterThan(now + 58 * 60_000);
    expect(inWindow.next).toContain(`it looks again at ${inWindow.nextEvaluationAt}`);

    // Production after staging: staging's target has not succeeded yet.
    const system = await api.system('ex-progress');
    const staging = await api.environment('ex-staging', 'resource.metadata["lane"] == "ex-staging"', system);
    const production = await api.environment(
      'ex-production',
      'resource.metadata["lane"] == "ex-production"',
      system,
    );
    await api.resource('ex-staging-node', 'service', { lane: 'ex-staging' });
    const prodNode = await api.resource('ex-production-node', 'service', { lane: 'ex-production' });
    const deployment = await api.deployment('ex-progress', system, {
      jobAgents: [{ ref: 'explain-puller' }],
    });
    await api.policy({
      name: 'ex staging first',
      selector: `environment.id == "${production}"`,
      rules: [
        {
          environmentProgression: {
            dependsOnEnvironmentSelector: `environment.id == "${staging}"`,
            minimumSoakTimeMinutes: 30,
          },
        },
        { versionCooldown: { intervalSeconds: 3600 } },
      ],
    });
    const version = await api.version(deployment, '1.0.0');
    const progressed = await explain(`${prodNode}-${production}-${deployment}`, version);
    expect(progressed.rules.find((rule) => rule.kind === 'environmentProgression')).toMatchObject({
      state: 'waiting',
      reason: 'ex-staging: 0 of 1 targets succeeded, 1 needed',
      waitingOn: { environmentId: staging, successes: 1 },
    });
    // Nothing deployed yet: the cooldown has nothing to cool down from.
    expect(progressed.rules.find((rule) => rule.kind === 'versionCooldown')).toMatchObject({
      state: 'passed',
      reason: 'nothing deployed to cool down from',
    });

    // Once a version runs, the next one cools down until an hour after the running one was created.
    await api.agent('explain-runner', 'test-runner', { status: 'successful' });
    const coolSystem = await api.system('ex-cool');
    const coolEnv = await api.environment('ex-cool', 'resource.metadata["lane"] == "ex-cool"', coolSystem);
    const coolNode = await api.resource('ex-cool-node', 'service', { lane: 'ex-cool' });
    const cool = await api.deployment('ex-cool', coolSystem, { jobAgents: [{ ref: 'explain-runner' }] });
    await api.policy({
      name: 'ex cooldown',
      selector: `environment.id == "${coolEnv}"`,
      rules: [{ versionCooldown: { intervalSeconds: 3600 } }],
    });
    const running = await api.version(cool, '1.0.0');
    await api.releaseWith(
      (r) => r.versionId === running && r.phase === 'succeeded',
      'the first version to run',
    );
    const next = await api.version(cool, '1.1.0');
    const cooling = await explain(`${coolNode}-${coolEnv}-${cool}`, next);
    const cooldown = cooling.rules.find((rule) => rule.kind === 'versionCooldown')!;
    expect(cooldown).toMatchObject({
      state: 'waiting',
      reason: expect.stringMatching(/^cooling down until /),
    });
    expect(Date.parse(cooldown.nextEvaluationAt!)).toBeGreaterThan(Date.now() + 55 * 60_000);
    expect(cooling.slot.currentRelease).toMatchObject({ versionTag: '1.0.0' });
  });

  it("explains a gradual rollout: each target's turn in the version's rollout to its environment", async () => {
    const system = await api.system('ex-gradual');
    const environment = await api.environment(
      'ex-gradual',
      'resource.metadata["lane"] == "ex-gradual"',
      system,
    );
    const nodes = [
      await api.resource('ex-gradual-a', 'service', { lane: 'ex-gradual' }),
      await api.resource('ex-gradual-b', 'service', { lane: 'ex-gradual' }),
    ];
    const deployment = await api.deployment('ex-gradual', system, { jobAgents: [{ ref: 'explain-puller' }] });
    await api.policy({
      name: 'ex gradual',
      selector: `environment.id == "${environment}"`,
      rules: [{ gradualRollout: { rolloutType: 'linear', timeScaleInterval: 3600 } }],
    });
    const version = await api.version(deployment, '1.0.0');
    await api.releaseWith(
      (r) => r.versionId === version && r.evaluation?.decision === 'wait',
      'the second target to wait for its turn',
    );
    const turns = await Promise.all(
      nodes.map(async (node) => (await explain(`${node}-${environment}-${deployment}`, version)).rules),
    );
    const rollout = turns
      .map((rules) => rules.find((rule) => rule.kind === 'gradualRollout')!)
      .sort((a, b) => a.reason.localeCompare(b.reason));
    expect(rollout[0]).toMatchObject({ state: 'passed', reason: 'target 1 of 2 is due' });
    expect(rollout[1]).toMatchObject({
      state: 'waiting',
      reason: expect.stringMatching(/^target 2 of 2 is scheduled for /),
    });
    expect(Date.parse(rollout[1]!.nextEvaluationAt!)).toBeGreaterThan(Date.now() + 55 * 60_000);
  });

  it('documents explain, the variable preview and the policy dry-run in the OpenAPI document', async () => {
    const document = (await stack.http.get('/openapi.json').expect(200)).body as {
      paths: Record<string, object>;
    };
    for (const path of [
      '/v1/workspaces/{workspaceId}/release-targets/{releaseTargetKey}/explain',
      '/v1/workspaces/{workspaceId}/release-targets/{releaseTargetKey}/variables',
      '/v1/workspaces/{workspaceId}/policies/dry-run',
    ])
      expect(Object.keys(document.paths)).toContain(path);
  });

  it('answers 404 for another workspace’s target or a version of another deployment', async () => {
    const { key } = await lane('ex-404');
    const other = await lane('ex-404b');
    const otherVersion = await api.version(other.deployment, '9.9.9');
    expect(
      (
        await stack.http
          .get(`${api.ws}/release-targets/${key}/explain?versionId=${otherVersion}`)
          .set(stack.auth)
      ).status,
    ).toBe(404);
    expect((await stack.http.get(`${api.ws}/release-targets/${key}/explain`).set(stack.auth)).status).toBe(
      404,
    );
  });
});
