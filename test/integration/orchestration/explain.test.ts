import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { explainCommand } from '../../../cli/commands/explain';
import type { Explanation } from '../../../domain/explain';
import { recordsApi } from '../../helpers/orchestration';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * Issue 15: "why is this target (not) on this version?", answered by the gates' own code over the
 * same facts the release workflow reads: its verdicts are the workflow's, rule for rule.
 */
describe('explain a release target', () => {
  let stack: TestStack;
  let api: ReturnType<typeof recordsApi>;
  let server: http.Server;
  let baseUrl: string;

  beforeAll(async () => {
    stack = await startTestStack();
    api = recordsApi(stack);
    await api.agent('explain-puller', 'http-pull');
    // The CLI talks HTTP: the stack's app on a real socket.
    server = http.createServer(stack.app.app.callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
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
