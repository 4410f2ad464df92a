import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiKeyStore } from '../../../application/apiKeys';
import { eventually } from '../../helpers/eventually';
import { dtstart, recordsApi } from '../../helpers/orchestration';
import { settled } from '../../helpers/settled';
import { decisionCommand } from '../../../cli/commands/approve';
import { listenOnSocket, startTestStack, type TestStack } from '../../helpers/stack';

/** Policy gates hold releases back, say why, and let them go when the rule passes — without a request where time decides. */
describe('policy gates', () => {
  let stack: TestStack;
  let api: ReturnType<typeof recordsApi>;
  let secondKey: string;
  let thirdKey: string;

  beforeAll(async () => {
    stack = await startTestStack();
    api = recordsApi(stack);
    await api.agent('puller', 'http-pull');
    const issued = await new ApiKeyStore(stack.orm.em.fork() as EntityManager).create({
      workspaceId: stack.workspaceId,
      name: 'second approver',
    });
    secondKey = issued.key;
    thirdKey = (
      await new ApiKeyStore(stack.orm.em.fork() as EntityManager).create({
        workspaceId: stack.workspaceId,
        name: 'third approver',
      })
    ).key;
  });
  afterAll(() => stack.close());

  /** A deployment with one resource per environment, in a system of its own. */
  async function lane(label: string, environments: string[], agent = 'puller') {
    const system = await api.system(label);
    const envIds: Record<string, string> = {};
    for (const env of environments) {
      envIds[env] = await api.environment(
        `${label}-${env}`,
        `resource.metadata["lane"] == "${label}-${env}"`,
        system,
      );
      await api.resource(`${label}-${env}-node`, 'service', { lane: `${label}-${env}` });
    }
    const deployment = await api.deployment(label, system, {
      resourceSelector: 'resource.kind == "service"',
      jobAgents: [{ ref: agent, config: {} }],
    });
    return { deployment, envIds };
  }

  it('binds an approval to what ships: a changed variable voids it, and explain says so', async () => {
    const { deployment, envIds } = await lane('bound', ['prod']);
    await api.policy({
      name: 'two approvals for bound-prod',
      selector: 'environment.name == "bound-prod"',
      rules: [{ anyApproval: { minApprovals: 2 } }],
    });
    const variable = `/deployments/${deployment}/variables/${randomUUID()}`;
    await api.send('put', variable, { key: 'LOG_LEVEL', default_value: 'info' }, [202]);
    await api.version(deployment, '1.0.0');
    const waiting = await api.releaseWith(
      (r) => r.environmentId === envIds.prod && r.evaluation?.decision === 'wait',
      'the release to wait for approvals',
    );
    const approve = (key: string) =>
      stack.http.post(`${api.ws}/releases/${waiting.id}/approve`).set('x-api-key', key).send({}).expect(202);
    const reasonContains = (text: string) =>
      eventually(
        async () =>
          (await api.get<{ phaseReason: string }>(`/releases/${waiting.id}`)).phaseReason.includes(text),
        { what: `the release to say "${text}"` },
      );

    await approve(stack.apiKey);
    await reasonContains('1 of 2 approvals');
    // What would ship changes after the first approval: it no longer counts when the second comes.
    await api.send('put', variable, { key: 'LOG_LEVEL', default_value: 'debug' }, [202]);
    await approve(secondKey);
    await reasonContains('1 of 2 approvals; test approved for a different configuration');
    const explained = await api.get<{ rules: { kind: string; reason: string }[] }>(
      `/release-targets/${waiting.resourceId}-${envIds.prod}-${deployment}/explain`,
    );
    expect(JSON.stringify(explained)).toContain('test approved for a different configuration');
    await settled(stack);
    expect(await api.jobs(`&deploymentId=${deployment}`)).toHaveLength(0);

    // Approved again from the CLI, for what ships now: the job carries the new value.
    const server = await listenOnSocket(stack);
    const lines: string[] = [];
    const write = (line: string) => lines.push(line);
    const connection = { api: server.url, key: stack.apiKey, workspace: stack.workspaceId };
    try {
      expect(
        await decisionCommand(
          'approve',
          waiting.id,
          { ...connection, reason: 'after the change' },
          write,
          write,
        ),
      ).toBe(0);
      expect(await decisionCommand('approve', randomUUID(), connection, write, write)).toBe(1);
    } finally {
      await server.close();
    }
    expect(lines).toEqual([
      `approved version ${waiting.versionId} in environment ${envIds.prod} by test: after the change`,
      expect.stringMatching(/^flightdeck approve: 404 /),
    ]);
    const [job] = await api.jobsSettleAt(1, `&deploymentId=${deployment}`);
    expect(job!.releaseId).toBe(waiting.id);
    expect((job!.dispatchContext as { variables: Record<string, unknown> }).variables.LOG_LEVEL).toBe(
      'debug',
    );
  });

  it('counts an approval on a target that appears later only for what its approver saw', async () => {
    const { deployment, envIds } = await lane('later', ['prod']);
    await api.policy({
      name: 'an approval for later-prod',
      selector: 'environment.name == "later-prod"',
      rules: [{ anyApproval: { minApprovals: 1 } }],
    });
    const variable = `/deployments/${deployment}/variables/${randomUUID()}`;
    await api.send('put', variable, { key: 'FOO', default_value: 'safe' }, [202]);
    await api.version(deployment, '1.0.0');
    const first = await api.releaseWith(
      (r) => r.environmentId === envIds.prod && r.evaluation?.decision === 'wait',
      'the first release to wait for its approval',
    );
    await stack.http.post(`${api.ws}/releases/${first.id}/approve`).set(stack.auth).send({}).expect(202);
    await api.jobsSettleAt(1, `&deploymentId=${deployment}`, 'the approved release’s job');

    // A new target that would get what the approver saw: the approval covers it.
    await api.resource('later-prod-second', 'service', { lane: 'later-prod' });
    const shipped = await api.jobsSettleAt(2, `&deploymentId=${deployment}`, 'the same configuration’s job');
    expect(
      shipped.map((job) => (job.dispatchContext as { variables: Record<string, unknown> }).variables.FOO),
    ).toEqual(['safe', 'safe']);

    // FOO changes, then a target appears: the approval was not given for what it would ship.
    await api.send('put', variable, { key: 'FOO', default_value: 'evil' }, [202]);
    const third = await api.resource('later-prod-third', 'service', { lane: 'later-prod' });
    const waiting = await api.releaseWith(
      (r) => r.resourceId === third && r.evaluation?.decision === 'wait',
      'the later target’s release to wait',
    );
    expect(waiting.evaluation!.reason).toContain(
      '0 of 1 approvals; test approved for a different configuration',
    );
    await settled(stack);
    expect(await api.jobs(`&deploymentId=${deployment}`)).toHaveLength(2);
  });

  it('holds a release until the second approval, says why, then gives it one job', async () => {
    const { deployment, envIds } = await lane('approve', ['prod']);
    await api.policy({
      name: 'two approvals in prod',
      selector: 'environment.name == "approve-prod"',
      rules: [{ anyApproval: { minApprovals: 2 } }],
    });
    await api.version(deployment, '1.0.0');
    const waiting = await api.releaseWith(
      (r) => r.environmentId === envIds.prod && r.evaluation?.decision === 'wait',
      'the release to wait for approvals',
    );
    expect(waiting.evaluation!.reason).toContain('0 of 2 approvals');
    expect(waiting.evaluation!.rules.find((rule) => rule.kind === 'anyApproval')).toMatchObject({
      state: 'waiting',
    });

    const approve = (key: string) =>
      stack.http
        .post(`${api.ws}/releases/${waiting.id}/approve`)
        .set('x-api-key', key)
        .send({ reason: 'looks good' })
        .expect(202);
    const first = await approve(stack.apiKey);
    expect(first.body).toMatchObject({ status: 'approved', userName: 'test', reason: 'looks good' });
    await eventually(
      async () =>
        (await api.get<{ phaseReason: string }>(`/releases/${waiting.id}`)).phaseReason.includes('1 of 2'),
      {
        what: 'the first approval to count',
      },
    );
    await settled(stack);
    expect(await api.jobs(`&deploymentId=${deployment}`)).toHaveLength(0);

    await approve(secondKey);
    const [job] = await api.jobsSettleAt(1, `&deploymentId=${deployment}`);
    expect(job!.releaseId).toBe(waiting.id);
  });

  it("refuses the approval of the key that created the version where a policy requires another approver (403), and counts another key's", async () => {
    const { deployment, envIds } = await lane('distinct', ['prod']);
    await api.policy({
      name: 'another approver in prod',
      selector: 'environment.name == "distinct-prod"',
      rules: [{ anyApproval: { minApprovals: 1, requireDistinctApprover: true } }],
    });
    const version = await api.version(deployment, '1.0.0');
    const waiting = await api.releaseWith(
      (r) => r.environmentId === envIds.prod && r.evaluation?.decision === 'wait',
      'the release to wait for an approval',
    );
    const approvals = async () =>
      (
        await (stack.orm.em.fork() as EntityManager).execute<{ n: number }[]>(
          'SELECT count(*)::int AS n FROM approval WHERE version_id = ?',
          [version],
        )
      )[0]!.n;

    // The creator's key, by both ways of approving: 403 with the reason, nothing written.
    const own = await stack.http.post(`${api.ws}/releases/${waiting.id}/approve`).set(stack.auth).send({});
    expect([own.status, own.body.code]).toEqual([403, 'distinct_approver_required']);
    expect(own.body.detail).toContain('policy "another approver in prod" requires another approver');
    const records = await stack.http
      .put(`${api.ws}/deployment-versions/${version}/user-approval-records`)
      .set(stack.auth)
      .send({ status: 'approved', environmentIds: [envIds.prod] });
    expect(records.status).toBe(403);
    expect(await approvals()).toBe(0);
    expect(await api.jobs(`&deploymentId=${deployment}`)).toHaveLength(0);

    await stack.http
      .post(`${api.ws}/releases/${waiting.id}/approve`)
      .set('x-api-key', secondKey)
      .send({})
      .expect(202);
    const [job] = await api.jobsSettleAt(1, `&deploymentId=${deployment}`);
    expect(job!.releaseId).toBe(waiting.id);
  });

  it('refuses every key that made the version what it ships, by approval, skip or override, and records each refusal', async () => {
    const { deployment, envIds } = await lane('authors', ['prod']);
    const policy = await api.policy({
      name: 'another approver for authors',
      selector: 'environment.name == "authors-prod"',
      rules: [{ anyApproval: { minApprovals: 1, requireDistinctApprover: true } }],
    });
    const ruleId = (await api.get<{ rules: { id: string }[] }>(`/policies/${policy}`)).rules[0]!.id;
    const version = await api.version(deployment, '1.0.0');
    const waiting = await api.releaseWith(
      (r) => r.environmentId === envIds.prod && r.evaluation?.decision === 'wait',
      'the release to wait for an approval',
    );
    // The second key changes what ships after the first created the version.
    await stack.http
      .patch(`${api.ws}/deployment-versions/${version}`)
      .set('x-api-key', secondKey)
      .send({ jobAgentConfig: { image: 'edited' } })
      .expect(202);

    const editor = await stack.http
      .post(`${api.ws}/releases/${waiting.id}/approve`)
      .set('x-api-key', secondKey)
      .send({});
    expect([editor.status, editor.body.code]).toEqual([403, 'distinct_approver_required']);
    expect(editor.body.detail).toBe(
      'The key that changed version 1.0.0 cannot approve it: policy "another approver for authors" requires another approver',
    );
    const skip = await stack.http
      .post(`${api.ws}/policy-skips`)
      .set(stack.auth)
      .send({ ruleId, versionId: version, reason: 'my own change' });
    expect([skip.status, skip.body.code]).toEqual([403, 'distinct_approver_required']);
    expect(skip.body.detail).toContain('The key that created version 1.0.0 cannot skip its approval rule');
    const override = await stack.http
      .post(`${api.ws}/releases/${waiting.id}/redeploy`)
      .set(stack.auth)
      .send({ overridePolicies: true, reason: 'my own change' });
    expect([override.status, override.body.code]).toEqual([403, 'distinct_approver_required']);

    const refusals = await (stack.orm.em.fork() as EntityManager).execute<
      { action: string; actor_name: string }[]
    >(
      `SELECT action, actor_name FROM audit_event WHERE action LIKE '%refused' AND workspace_id = ? ORDER BY id`,
      [stack.workspaceId],
    );
    expect(
      refusals.filter((row) => row.action !== 'approval.refused' || row.actor_name === 'second approver'),
    ).toEqual([
      { action: 'approval.refused', actor_name: 'second approver' },
      { action: 'policy_skip.refused', actor_name: 'test' },
      { action: 'release.override_refused', actor_name: 'test' },
    ]);
    await settled(stack);
    expect(await api.jobs(`&deploymentId=${deployment}`)).toHaveLength(0);

    // A key that neither created nor changed it approves: the release goes.
    await stack.http
      .post(`${api.ws}/releases/${waiting.id}/approve`)
      .set('x-api-key', thirdKey)
      .send({})
      .expect(202);
    const [job] = await api.jobsSettleAt(1, `&deploymentId=${deployment}`);
    expect(job!.releaseId).toBe(waiting.id);
  });

  it('blocks a version that someone rejected', async () => {
    const { deployment, envIds } = await lane('reject', ['prod']);
    await api.policy({
      name: 'approval in reject lane',
      selector: 'environment.name == "reject-prod"',
      rules: [{ anyApproval: { minApprovals: 1 } }],
    });
    const version = await api.version(deployment, '1.0.0');
    await api.releaseWith(
      (r) => r.environmentId === envIds.prod && r.evaluation?.decision === 'wait',
      'the release to wait',
    );
    await stack.http
      .put(`${api.ws}/deployment-versions/${version}/user-approval-records`)
      .set(stack.auth)
      .send({ status: 'rejected', environmentIds: [envIds.prod], reason: 'broken build' })
      .expect(202);
    const blocked = await api.releaseWith(
      (r) => r.environmentId === envIds.prod && r.evaluation?.decision === 'blocked',
      'the release to be blocked',
    );
    expect(blocked.evaluation!.reason).toMatch(/rejected by test: broken build/);
    await stack.http
      .post(`${api.ws}/releases/${blocked.id}/approve`)
      .set('x-api-key', secondKey)
      .send({})
      .expect(202);
    await settled(stack);
    expect(await api.jobs(`&deploymentId=${deployment}`)).toHaveLength(0);
  });

  it('holds prod until staging succeeded and soaked, then starts it on its own', async () => {
    const { deployment, envIds } = await lane('progress', ['staging', 'prod']);
    await api.policy({
      name: 'prod after staging',
      selector: 'environment.name == "progress-prod"',
      rules: [
        {
          environmentProgression: {
            dependsOnEnvironmentSelector: 'environment.name == "progress-staging"',
            minimumSoakTimeMinutes: 0.05,
          },
        },
      ],
    });
    await api.version(deployment, '1.0.0');
    const [stagingJob] = await api.jobsSettleAt(1, `&deploymentId=${deployment}`);
    expect(stagingJob!.environmentId).toBe(envIds.staging);
    const prod = await api.releaseWith(
      (r) => r.environmentId === envIds.prod && r.evaluation?.decision === 'wait',
      'prod to wait for staging',
    );
    expect(prod.evaluation!.reason).toMatch(/progress-staging: 0 of 1 targets succeeded/);

    await api.report(stagingJob!.id, 'successful');
    const soaking = await api.releaseWith(
      (r) => r.id === prod.id && (r.evaluation?.reason ?? '').startsWith('soaking until'),
      'prod to soak',
    );
    expect(soaking.phase).toBe('pending');
    const [prodJob] = await api.jobsSettleAt(
      1,
      `&environmentId=${envIds.prod}&status=queued`,
      'the prod job after the soak',
    );
    expect(prodJob!.releaseId).toBe(prod.id);
  });

  it('does not count a cancelled release’s job toward progression, even when its agent reports success', async () => {
    const agentId = await api.agent('graceful-puller', 'http-pull', {
      leaseSeconds: 60,
      cancelGraceSeconds: 60,
    });
    const { deployment, envIds } = await lane('cancelstage', ['staging', 'prod'], 'graceful-puller');
    await api.policy({
      name: 'prod after a staging that was not cancelled',
      selector: 'environment.name == "cancelstage-prod"',
      rules: [
        {
          environmentProgression: {
            dependsOnEnvironmentSelector: 'environment.name == "cancelstage-staging"',
          },
        },
      ],
    });
    await api.version(deployment, '1.0.0');
    const [stagingJob] = await api.jobsSettleAt(1, `&deploymentId=${deployment}`);
    const claimed = await stack.http
      .post(`${api.ws}/job-agents/${agentId}/jobs/${stagingJob!.id}/claim`)
      .set(stack.auth)
      .expect(200);
    await stack.http.post(`${api.ws}/releases/${stagingJob!.releaseId}/cancel`).set(stack.auth).expect(202);
    // The agent finishes before its deadline and says so: the job succeeded, its release stays cancelled.
    await stack.http
      .put(`${api.ws}/jobs/${stagingJob!.id}/status`)
      .set(stack.auth)
      .send({ status: 'successful', claim_id: claimed.body.claim_id })
      .expect(202);
    // Any policy change evaluates waiting releases again: prod's gate reads staging's jobs anew.
    await api.policy({
      name: 'wakes waiting releases',
      selector: 'environment.name == "no-such-environment"',
      rules: [{ anyApproval: { minApprovals: 1 } }],
    });
    await settled(stack);
    const prod = (await api.releases(`&deploymentId=${deployment}`)).find(
      (r) => r.environmentId === envIds.prod,
    )!;
    expect(prod.phase).toBe('pending');
    expect(prod.evaluation!.reason).toMatch(/cancelstage-staging: 0 of 1 targets succeeded/);
    expect(await api.jobs(`&environmentId=${envIds.prod}`)).toHaveLength(0);
  });

  it('holds a release inside a deny window and starts it when the window ends, without any request', async () => {
    const { deployment } = await lane('window', ['prod']);
    const endsAt = Date.now() + 6_000;
    await api.policy({
      name: 'freeze',
      selector: 'environment.name == "window-prod"',
      rules: [
        {
          deploymentWindow: {
            rrule: `${dtstart(new Date(endsAt - 60 * 60_000))}\nRRULE:FREQ=DAILY`,
            durationMinutes: 60,
            timezone: 'UTC',
            allowWindow: false,
          },
        },
      ],
    });
    await api.version(deployment, '1.0.0');
    const held = await api.releaseWith(
      (r) => r.evaluation?.decision === 'wait' && r.evaluation.reason.includes('deny window'),
      'the freeze',
    );
    expect(held.phase).toBe('pending');
    expect(await api.jobs(`&deploymentId=${deployment}`)).toHaveLength(0);
    const [job] = await api.jobsSettleAt(1, `&deploymentId=${deployment}`, 'the job after the window');
    const created = Date.parse((await api.get<{ createdAt: string }>(`/jobs/${job!.id}`)).createdAt);
    expect(created).toBeGreaterThanOrEqual(endsAt - 1000);
  });

  it('lets a newer ready version replace a release still waiting at a gate', async () => {
    const { deployment, envIds } = await lane('supersede', ['prod']);
    await api.policy({
      name: 'approval in supersede lane',
      selector: 'environment.name == "supersede-prod"',
      rules: [{ anyApproval: { minApprovals: 1 } }],
    });
    const v1 = await api.version(deployment, '1.0.0');
    const first = await api.releaseWith(
      (r) => r.versionId === v1 && r.evaluation?.decision === 'wait',
      'v1 to wait',
    );
    const v2 = await api.version(deployment, '2.0.0');
    const replaced = await api.releaseWith(
      (r) => r.id === first.id && r.phase === 'superseded',
      'v1 to be superseded',
    );
    expect(replaced.evaluation?.reason ?? '').toBeDefined();
    const second = await api.releaseWith(
      (r) => r.versionId === v2 && r.evaluation?.decision === 'wait',
      'v2 to wait',
    );
    await stack.http.post(`${api.ws}/releases/${second.id}/approve`).set(stack.auth).send({}).expect(202);
    const [job] = await api.jobsSettleAt(1, `&environmentId=${envIds.prod}`);
    expect(job!.releaseId).toBe(second.id);
  });

  it('never preempts a running job: the newer release waits for the target', async () => {
    const { deployment } = await lane('busy', ['prod']);
    const v1 = await api.version(deployment, '1.0.0');
    const [running] = await api.jobsSettleAt(1, `&deploymentId=${deployment}`);
    await api.report(running!.id, 'in_progress');
    const v2 = await api.version(deployment, '2.0.0');
    const waiting = await api.releaseWith(
      (r) => r.versionId === v2 && (r.evaluation?.reason ?? '').includes('busy'),
      'v2 to wait for the target',
    );
    expect(waiting.phase).toBe('pending');
    const stillRunning = await api.get<{ status: string }>(`/jobs/${running!.id}`);
    expect(stillRunning.status).toBe('in_progress');
    expect((await api.releases(`&versionId=${v1}`))[0]!.phase).toBe('running');

    await api.report(running!.id, 'successful');
    const [next] = await api.jobsSettleAt(
      1,
      `&deploymentId=${deployment}&status=queued`,
      'v2 after v1 finished',
    );
    expect(next!.releaseId).toBe(waiting.id);
  });
});
