import type { EntityManager } from '@mikro-orm/postgresql';
import { skipCreateCommand, skipDeleteCommand, skipListCommand } from '../../../cli/commands/skip';
import { eventually } from '../../helpers/eventually';
import { recordsApi } from '../../helpers/orchestration';
import { listenOnSocket, startTestStack, type TestStack } from '../../helpers/stack';

interface Skip {
  id: string;
  ruleId: string;
  versionId: string;
  environmentId?: string;
  reason: string;
  expiresAt: string;
  active: boolean;
  createdBy: { id: string; name: string };
}

/**
 * A policy skip lets a version's releases pass one rule on its scope until it expires
 * (docs/behaviour.md "Policy skips").
 */
describe('policy skips', () => {
  let stack: TestStack;
  let api: ReturnType<typeof recordsApi>;
  let server: Awaited<ReturnType<typeof listenOnSocket>>;
  let baseUrl: string;

  beforeAll(async () => {
    stack = await startTestStack();
    api = recordsApi(stack);
    await api.agent('skip-puller', 'http-pull');
    // The CLI and the browser speak HTTP: the stack's app on a real socket.
    server = await listenOnSocket(stack);
    baseUrl = server.url;
  });
  afterAll(async () => {
    await server?.close();
    await stack?.close();
  });

  const expiredSkips = async () =>
    Number(
      (
        await (stack.orm.em.fork() as EntityManager).execute<{ n: string }[]>(
          'SELECT count(*) AS n FROM policy_skip WHERE expires_at <= now()',
        )
      )[0]!.n,
    );
  const skipCount = async () =>
    Number(
      (
        await (stack.orm.em.fork() as EntityManager).execute<{ n: string }[]>(
          'SELECT count(*) AS n FROM policy_skip',
        )
      )[0]!.n,
    );

  it('lets the waiting release go at once, says who, until when and why, and stops counting when it expires', async () => {
    const system = await api.system('skips');
    const prod = await api.environment('skips-prod', 'resource.metadata["lane"] == "skips-prod"', system);
    await api.resource('skips-node-1', 'service', { lane: 'skips-prod' });
    const deployment = await api.deployment('skips', system, { jobAgents: [{ ref: 'skip-puller' }] });
    const policyId = await api.policy({
      name: 'approve skips-prod',
      selector: 'environment.name == "skips-prod"',
      rules: [{ anyApproval: { minApprovals: 1 } }, { retry: { maxRetries: 1 } }],
    });
    const policy = await api.get<{ rules: { id: string; anyApproval?: object; retry?: object }[] }>(
      `/policies/${policyId}`,
    );
    const approvalRule = policy.rules.find((rule) => rule.anyApproval)!.id;
    const retryRule = policy.rules.find((rule) => rule.retry)!.id;
    const version = await api.version(deployment, '1.0.0');
    const waiting = await api.releaseWith(
      (r) => r.versionId === version && r.evaluation?.decision === 'wait',
      'the release to wait for its approval',
    );

    // Refused, and nothing written: an unknown rule, a rule that is no gate, a past or too distant expiry.
    const body = {
      ruleId: approvalRule,
      versionId: version,
      environmentId: prod,
      reason: 'hotfix, agreed on the call',
    };
    const refusals: [object, number, string][] = [
      [{ ...body, ruleId: '00000000-0000-4000-8000-000000000001' }, 404, 'not_found'],
      [{ ...body, ruleId: retryRule }, 400, 'validation_failed'],
      [{ ...body, expiresAt: new Date(Date.now() - 1000).toISOString() }, 400, 'validation_failed'],
      [{ ...body, expiresAt: new Date(Date.now() + 8 * 86_400_000).toISOString() }, 400, 'validation_failed'],
      [{ ...body, versionId: '00000000-0000-4000-8000-000000000002' }, 404, 'not_found'],
    ];
    for (const [refused, status, code] of refusals) {
      const res = await stack.http.post(`${api.ws}/policy-skips`).set(stack.auth).send(refused);
      expect([res.status, res.body.code]).toEqual([status, code]);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    }
    expect((await stack.http.post(`${api.ws}/policy-skips`).send(body)).status).toBe(401);
    expect(await skipCount()).toBe(0);

    const expiresAt = new Date(Date.now() + 4_000).toISOString();
    const created = await stack.http
      .post(`${api.ws}/policy-skips`)
      .set(stack.auth)
      .send({ ...body, expiresAt });
    expect(created.status).toBe(201);
    const skip = created.body as Skip;
    expect(skip).toMatchObject({
      ruleId: approvalRule,
      versionId: version,
      environmentId: prod,
      reason: body.reason,
      expiresAt,
      active: true,
      createdBy: { name: 'test' },
    });

    // The waiting release looks again at once and starts its job; its verdict names the skip.
    await api.jobsSettleAt(1, `&deploymentId=${deployment}&status=queued`, 'the skipped release’s job');
    const passed = await api.get<{
      evaluation: { rules: { kind: string; state: string; reason: string }[] };
    }>(`/releases/${waiting.id}`);
    expect(passed.evaluation.rules.find((rule) => rule.kind === 'anyApproval')).toMatchObject({
      state: 'passed',
      reason: `skipped by test until ${expiresAt}: ${body.reason}`,
    });

    // Expired, it no longer counts: a resource that joins prod afterwards waits for its approval.
    await eventually(async () => !(await api.get<Skip>(`/policy-skips/${skip.id}`)).active, {
      what: 'the skip to expire',
      timeoutMs: 10_000,
    });
    const late = await api.resource('skips-node-2', 'service', { lane: 'skips-prod' });
    const lateRelease = await api.releaseWith(
      (r) => r.resourceId === late && r.evaluation?.decision === 'wait',
      'the late target’s release to wait',
    );
    expect(lateRelease.evaluation!.reason).toContain('0 of 1 approvals');

    // From the CLI: a skip of the late target alone lets its release go; listed, then deleted.
    const lines: string[] = [];
    const write = (line: string) => lines.push(line);
    const connection = { api: baseUrl, key: stack.apiKey, workspace: stack.workspaceId };
    expect(
      await skipCreateCommand(
        { ...connection, rule: approvalRule, version, resource: late, reason: 'the new node, same hotfix' },
        write,
        write,
      ),
    ).toBe(0);
    expect(lines.at(-1)).toMatch(
      new RegExp(
        `rule ${approvalRule}  version ${version}  resource ${late}  until .* by test: the new node`,
      ),
    );
    await api.jobsSettleAt(2, `&deploymentId=${deployment}&status=queued`, 'the late target’s job');
    expect(await skipListCommand({ ...connection, active: 'true' }, write, write)).toBe(0);
    const cliSkip = lines.at(-1)!.split('  ')[0]!;
    expect(await skipDeleteCommand(cliSkip, connection, write, write)).toBe(0);
    expect(lines.at(-1)).toMatch(/^deleted /);
    expect(await skipDeleteCommand(cliSkip, connection, write, write)).toBe(1);
    expect(lines.at(-1)).toMatch(/skip delete: 404/);

    // Listed by version and by whether they still count; deleted, it is gone.
    const list = (query: string) =>
      api.get<{ items: Skip[]; total: number }>(`/policy-skips?versionId=${version}${query}`);
    expect((await list('&active=false')).items.map((item) => item.id)).toEqual([skip.id]);
    expect((await list('&active=true')).total).toBe(0);
    expect((await list(`&ruleId=${retryRule}`)).total).toBe(0);
    const deleted = await stack.http.delete(`${api.ws}/policy-skips/${skip.id}`).set(stack.auth);
    expect([deleted.status, deleted.body.id]).toEqual([200, skip.id]);
    expect((await stack.http.get(`${api.ws}/policy-skips/${skip.id}`).set(stack.auth)).status).toBe(404);
  });

  it('caps the unexpired skips of a workspace, as it caps holds', async () => {
    const system = await api.system('skip-cap');
    await api.environment('skip-cap-prod', 'resource.metadata["lane"] == "skip-cap-prod"', system);
    const deployment = await api.deployment('skip-cap', system, { jobAgents: [{ ref: 'skip-puller' }] });
    const policyId = await api.policy({
      name: 'approve skip-cap-prod',
      selector: 'environment.name == "skip-cap-prod"',
      rules: [{ anyApproval: { minApprovals: 1 } }],
    });
    const ruleId = (await api.get<{ rules: { id: string }[] }>(`/policies/${policyId}`)).rules[0]!.id;
    const version = await api.version(deployment, '1.0.0');
    const em = stack.orm.em.fork() as EntityManager;
    const active = Number(
      (
        await em.execute<{ n: string }[]>(`SELECT count(*) AS n FROM policy_skip WHERE expires_at > now()`)
      )[0]!.n,
    );
    await em.execute(
      `INSERT INTO policy_skip (id, workspace_id, rule_id, version_id, reason, expires_at, created_by_id, created_by_name, created_at)
       SELECT gen_random_uuid(), ?, ?, ?, 'filler', now() + interval '1 hour', 'filler', 'filler', now()
         FROM generate_series(1, ?)`,
      [stack.workspaceId, ruleId, version, 100 - active],
    );
    const refused = await stack.http
      .post(`${api.ws}/policy-skips`)
      .set(stack.auth)
      .send({ ruleId, versionId: version, reason: 'one more' });
    expect([refused.status, refused.body.code]).toEqual([409, 'too_many_skips']);
    expect(await skipCount()).toBe(100 + (await expiredSkips()));
  });
});
