import { randomUUID } from 'node:crypto';
import { eventually } from '../../helpers/eventually';
import { recordsApi, type Release } from '../../helpers/orchestration';
import { settled } from '../../helpers/settled';
import { startTestStack, type TestStack } from '../../helpers/stack';

type ReleaseRead = Release & {
  phaseReason: string | null;
  redeploys: { by: string; overrideReason: string | null; rollbackOf?: string }[];
};

/**
 * A rollback rule takes a target back to its previous successful release, once per failure
 * (docs/behaviour.md "Rollback").
 */
describe('rollback', () => {
  let stack: TestStack;
  let api: ReturnType<typeof recordsApi>;
  let agent: string;

  beforeAll(async () => {
    stack = await startTestStack();
    api = recordsApi(stack);
    agent = await api.agent('rollback-puller', 'http-pull');
    await api.policy({
      name: 'roll back on failure',
      selector: 'deployment.slug.startsWith("rb-")',
      rules: [{ rollback: { onJobStatuses: ['failure'] } }],
    });
  });
  afterAll(() => stack?.close());

  /** A deployment on one resource of its own. */
  async function lane(label: string) {
    const system = await api.system(label);
    await api.environment(label, `resource.metadata["lane"] == "${label}"`, system);
    await api.resource(`${label}-node`, 'service', { lane: label });
    return api.deployment(label, system, { jobAgents: [{ ref: 'rollback-puller' }] });
  }

  const release = (id: string) => api.get<ReleaseRead>(`/releases/${id}`);
  const phase = (id: string, wanted: string) =>
    eventually(async () => ((await release(id)).phase === wanted ? true : undefined), {
      what: `release ${id} to be ${wanted}`,
      timeoutMs: 30_000,
    });

  /** A job's variables as its agent gets them when it claims it (secrets opened). */
  const claimedVariables = async (jobId: string) => {
    const claimed = await stack.http
      .post(`${api.ws}/job-agents/${agent}/jobs/${jobId}/claim`)
      .set(stack.auth)
      .expect(200);
    return (claimed.body.dispatchContext as { variables: Record<string, unknown> }).variables;
  };

  it('runs the previous successful release again after a failure, with its variables, marked as a rollback, exactly once', async () => {
    const deployment = await lane('rb-app');
    const variable = (key: string) => `/deployments/${deployment}/variables/${key}`;
    const [level, token] = [randomUUID(), randomUUID()];
    await api.send('put', variable(level), { key: 'LOG_LEVEL', default_value: 'info' }, [202]);
    await api.send(
      'put',
      variable(token),
      { key: 'TOKEN', default_value: 'first-secret', sensitive: true },
      [202],
    );
    const v1 = await api.version(deployment, '1.0.0');
    const [first] = await api.jobsSettleAt(1, `&deploymentId=${deployment}&status=queued`, 'the 1.0.0 job');
    expect(await claimedVariables(first!.id)).toEqual({ LOG_LEVEL: 'info', TOKEN: 'first-secret' });
    await api.report(first!.id, 'successful');
    await phase(first!.releaseId, 'succeeded');

    // What 2.0.0 ships differs in its variables too; the rollback restores 1.0.0's as they ran.
    await api.send('put', variable(level), { key: 'LOG_LEVEL', default_value: 'debug' }, [202]);
    await api.send(
      'put',
      variable(token),
      { key: 'TOKEN', default_value: 'second-secret', sensitive: true },
      [202],
    );

    await api.version(deployment, '2.0.0');
    const [broken] = await api.jobsSettleAt(1, `&deploymentId=${deployment}&status=queued`, 'the 2.0.0 job');
    expect(await claimedVariables(broken!.id)).toEqual({ LOG_LEVEL: 'debug', TOKEN: 'second-secret' });
    await api.report(broken!.id, 'failure', 'crash loop');
    await phase(broken!.releaseId, 'failed');
    expect((await release(broken!.releaseId)).phaseReason).toContain(
      `rolled back to 1.0.0 (release ${first!.releaseId}): its job ended failure`,
    );

    // 1.0.0's release runs again, with one new job, marked as a rollback of 2.0.0's.
    const [again] = await api.jobsSettleAt(
      1,
      `&deploymentId=${deployment}&status=queued`,
      'the rollback job',
    );
    expect(again!.releaseId).toBe(first!.releaseId);
    expect(await claimedVariables(again!.id)).toEqual({ LOG_LEVEL: 'info', TOKEN: 'first-secret' });
    const rolledBack = await release(first!.releaseId);
    expect(rolledBack.versionId).toBe(v1);
    expect(rolledBack.redeploys.at(-1)).toMatchObject({
      by: 'rollback',
      rollbackOf: broken!.releaseId,
      overrideReason: `rollback after release ${broken!.releaseId} failed: its job ended failure`,
    });

    // The rollback fails too: it is not rolled back again, and nothing else starts.
    await api.report(again!.id, 'failure', 'still broken');
    await phase(first!.releaseId, 'failed');
    expect((await release(first!.releaseId)).phaseReason).toContain(
      'not rolled back: this release was itself a rollback',
    );
    await settled(stack, 'the stack to settle after the failed rollback');
    expect(await api.jobs(`&deploymentId=${deployment}`)).toHaveLength(3);
  });

  it('says so when there is nothing to roll back to', async () => {
    const deployment = await lane('rb-new');
    await api.version(deployment, '1.0.0');
    const [job] = await api.jobsSettleAt(1, `&deploymentId=${deployment}&status=queued`, 'the first job');
    await api.report(job!.id, 'failure');
    await phase(job!.releaseId, 'failed');
    expect((await release(job!.releaseId)).phaseReason).toContain(
      'nothing to roll back to: no earlier release succeeded here',
    );
    await settled(stack, 'the stack to settle');
    expect(await api.jobs(`&deploymentId=${deployment}`)).toHaveLength(1);
  });
});
