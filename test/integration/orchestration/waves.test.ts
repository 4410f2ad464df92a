import { eventually } from '../../helpers/eventually';
import { recordsApi, type Job, type Release } from '../../helpers/orchestration';
import { settled } from '../../helpers/settled';
import { startTestStack, type TestStack } from '../../helpers/stack';

interface RolloutRead {
  id: string;
  state: string;
  currentWave: number;
  reason: string;
  halt: { reason: string; at: string } | null;
  awaitingJudgement: { wave: number; since: string } | null;
  judgements: { wave: number; decision: string; reason: string }[];
  waves: { name: string; maxParallel: number; targets: Record<string, number> }[];
}

const BAKE_SECONDS = 5;

/**
 * Rollouts in waves (docs/behaviour.md "Rolling out to a fleet"), over HTTP with a pull agent: the
 * waves run in order, at most `maxParallel` at once, each after the bake of the one before; a
 * failing canary halts the rollout by itself; operators pause, resume and abort it.
 */
describe('rollouts in waves', () => {
  let stack: TestStack;
  let api: ReturnType<typeof recordsApi>;

  beforeAll(async () => {
    stack = await startTestStack();
    api = recordsApi(stack);
    await api.agent('wave-puller', 'http-pull');
  });
  afterAll(() => stack?.close());

  /**
   * A deployment on its own fleet: one canary, three targets in eu, three in us, under a waves rule
   * (canary, then eu and us, two at once, each baked), with `haltOn` as given.
   */
  async function fleet(
    label: string,
    haltOn?: object,
    options: { bakeSeconds?: number; onHalt?: string; judgement?: object } = {},
  ) {
    const bakeSeconds = options.bakeSeconds ?? BAKE_SECONDS;
    const system = await api.system(label);
    await api.environment(label, `resource.metadata["fleet"] == "${label}"`, system);
    const regions = ['canary', 'eu', 'eu', 'eu', 'us', 'us', 'us'];
    for (const [n, region] of regions.entries()) {
      await api.resource(`${label}-${region}-${n}`, 'service', { fleet: label, region });
    }
    const deployment = await api.deployment(label, system, { jobAgents: [{ ref: 'wave-puller' }] });
    const region = (name: string) => `resource.metadata["region"] == "${name}"`;
    await api.policy({
      name: `${label} waves`,
      selector: `deployment.slug == "${label}"`,
      rules: [
        {
          waves: {
            waves: [
              { name: 'canary', selector: region('canary'), bakeSeconds },
              {
                name: 'eu',
                selector: region('eu'),
                maxParallel: 2,
                bakeSeconds,
                ...(options.judgement ? { manualJudgement: options.judgement } : {}),
              },
              { name: 'us', selector: region('us'), maxParallel: 2 },
            ],
            ...(haltOn ? { haltOn, onHalt: options.onHalt ?? 'pause' } : {}),
          },
        },
      ],
    });
    return deployment;
  }

  const rolloutOf = async (deployment: string, version: string) =>
    (await api.get<{ rollouts: RolloutRead[] }>(`/deployments/${deployment}/versions/${version}/rollout`))
      .rollouts;
  const control = (deployment: string, version: string, what: string, expected = [200]) =>
    api.send(
      'post',
      `/deployments/${deployment}/versions/${version}/rollout/${what}`,
      { reason: 'test' },
      expected,
    );
  const resourceName = async (job: Job) =>
    (await api.get<{ name: string }>(`/resources/${job.resourceId}`)).name;
  const active = async (deployment: string) =>
    (await api.jobs(`&deploymentId=${deployment}`)).filter((job) =>
      ['queued', 'in_progress'].includes(job.status),
    );
  const succeed = async (jobs: readonly Job[]) => {
    for (const job of jobs) await api.report(job.id, 'successful');
  };
  const release = (id: string) => api.get<Release & { completedAt: string | null }>(`/releases/${id}`);

  it('runs the waves in order, at most two at once, each after the bake of the one before', async () => {
    const deployment = await fleet('waves-order');
    const version = await api.version(deployment, '1.0.0');

    const [canary] = await api.jobsSettleAt(1, `&deploymentId=${deployment}`, 'the canary job');
    expect(await resourceName(canary!)).toMatch(/-canary-/);
    const [started] = await rolloutOf(deployment, version);
    expect(started!.waves.map((wave) => [wave.name, wave.targets.queued, wave.targets.waiting])).toEqual([
      ['canary', 1, 0],
      ['eu', 0, 3],
      ['us', 0, 3],
      ['rest', 0, 0],
    ]);
    expect(started!.waves[1]!.maxParallel).toBe(2);

    await succeed([canary!]);
    const canaryEnded = Date.parse(
      (
        await eventually(
          async () => {
            const read = await release(canary!.releaseId);
            return read.completedAt ? read : undefined;
          },
          { what: 'the canary release to end' },
        )
      ).completedAt!,
    );
    const eu = await api.jobsSettleAt(2, `&deploymentId=${deployment}&status=queued`, 'two eu jobs');
    for (const job of eu) expect(await resourceName(job)).toMatch(/-eu-/);
    const euStarted = await Promise.all(eu.map((job) => api.get<{ createdAt: string }>(`/jobs/${job.id}`)));
    for (const job of euStarted) {
      expect(Date.parse(job.createdAt) - canaryEnded).toBeGreaterThanOrEqual(BAKE_SECONDS * 1000);
    }

    // The third eu target takes the slot of the first to end, never a third one at once.
    await succeed([eu[0]!]);
    const next = await api.jobsSettleAt(2, `&deploymentId=${deployment}&status=queued`, 'the third eu job');
    expect(next.map((job) => job.id)).toContain(eu[1]!.id);
    expect(await active(deployment)).toHaveLength(2);
    await succeed(next);

    const us = await api.jobsSettleAt(2, `&deploymentId=${deployment}&status=queued`, 'two us jobs');
    for (const job of us) expect(await resourceName(job)).toMatch(/-us-/);
    await succeed(us);
    await succeed(await api.jobsSettleAt(1, `&deploymentId=${deployment}&status=queued`, 'the last us job'));
    const done = await eventually(
      async () => {
        const [rollout] = await rolloutOf(deployment, version);
        return rollout?.state === 'completed' ? rollout : undefined;
      },
      { what: 'the rollout to complete' },
    );
    expect(done.waves.map((wave) => wave.targets.succeeded)).toEqual([1, 3, 3, 0]);
  }, 90_000);

  it('halts by itself when the canary fails, holds every other target with the reason, and resumes', async () => {
    const deployment = await fleet('waves-halt', { failurePercent: 50 });
    const version = await api.version(deployment, '1.0.0');
    const [canary] = await api.jobsSettleAt(1, `&deploymentId=${deployment}`, 'the canary job');
    await api.report(canary!.id, 'failure', 'crash loop');

    const halted = await eventually(
      async () => {
        const [rollout] = await rolloutOf(deployment, version);
        return rollout?.state === 'halted' ? rollout : undefined;
      },
      { what: 'the rollout to halt' },
    );
    expect(halted.halt?.reason).toBe('halted: 1 of 1 targets failed in wave canary (100 % ≥ 50 %)');
    await settled(stack, 'the stack to settle after the halt');
    expect(await active(deployment)).toEqual([]);
    const waiting = await api.releaseWith(
      (r) => r.deploymentId === deployment && r.phase === 'pending',
      'a release held by the halt',
    );
    const explain = await api.get<{ rules: { kind: string; state: string; reason: string }[] }>(
      `/release-targets/${waiting.releaseTargetKey}/explain`,
    );
    expect(explain.rules.find((rule) => rule.kind === 'waves')).toMatchObject({
      state: 'waiting',
      reason: expect.stringContaining('halted: 1 of 1 targets failed in wave canary'),
    });
    const audit = await api.get<{ items: { action: string; details: { reason: string } }[] }>(
      `/audit-events?cel=${encodeURIComponent('event.action == "rollout.halted"')}`,
    );
    expect(audit.items.map((event) => event.details.reason)).toEqual([halted.halt!.reason]);

    await control(deployment, version, 'pause', [409]);
    await control(deployment, version, 'resume');
    const eu = await api.jobsSettleAt(
      2,
      `&deploymentId=${deployment}&status=queued`,
      'two eu jobs after the resume',
    );
    for (const job of eu) expect(await resourceName(job)).toMatch(/-eu-/);
  }, 90_000);

  it('pauses, resumes and aborts: an aborted rollout blocks the targets it had not admitted', async () => {
    const deployment = await fleet('waves-abort');
    const version = await api.version(deployment, '1.0.0');
    const [canary] = await api.jobsSettleAt(1, `&deploymentId=${deployment}`, 'the canary job');

    const [paused] = (await control(deployment, version, 'pause')).rollouts as RolloutRead[];
    expect(paused!.state).toBe('paused');
    await succeed([canary!]);
    await settled(stack, 'the stack to settle while paused');
    expect(await active(deployment)).toEqual([]);
    expect((await rolloutOf(deployment, version))[0]!.reason).toMatch(/^the rollout is paused at wave eu/);

    const pauses = await api.get<{
      items: { action: string; record: { id: string }; actor: { name: string } }[];
    }>(`/audit-events?cel=${encodeURIComponent('event.action == "rollout.paused"')}`);
    expect(pauses.items).toEqual([
      expect.objectContaining({
        action: 'rollout.paused',
        record: { type: 'rollout', id: version },
        actor: expect.objectContaining({ type: 'key' }),
      }),
    ]);
    const [aborted] = (await control(deployment, version, 'abort')).rollouts as RolloutRead[];
    expect(aborted!.state).toBe('aborted');
    await control(deployment, version, 'resume', [409]);
    const blocked = await api.releaseWith(
      (r) =>
        r.deploymentId === deployment &&
        r.evaluation?.rules.some((rule) => rule.kind === 'waves' && rule.state === 'blocked') === true,
      'a release blocked by the abort',
    );
    expect(blocked.evaluation!.rules.find((rule) => rule.kind === 'waves')!.reason).toContain(
      'the rollout was aborted',
    );
    await settled(stack, 'the stack to settle after the abort');
    expect(await active(deployment)).toEqual([]);
  }, 90_000);

  /** Every job of the version's rollout reported successful, wave after wave, until it completes. */
  async function succeedAll(deployment: string, version: string) {
    await eventually(
      async () => {
        await succeed(await api.jobs(`&deploymentId=${deployment}&status=queued`));
        const [rollout] = await rolloutOf(deployment, version);
        return rollout?.state === 'completed' ? true : undefined;
      },
      { what: 'the rollout to complete', timeoutMs: 60_000 },
    );
  }

  it('with onHalt rollback, takes a failed canary back to the version it ran before', async () => {
    const deployment = await fleet(
      'waves-rollback',
      { failurePercent: 50 },
      { bakeSeconds: 0, onHalt: 'rollback' },
    );
    const v1 = await api.version(deployment, '1.0.0');
    await succeedAll(deployment, v1);

    const v2 = await api.version(deployment, '2.0.0');
    const [canary] = await api.jobsSettleAt(
      1,
      `&deploymentId=${deployment}&status=queued`,
      'the 2.0.0 canary job',
    );
    await api.report(canary!.id, 'failure', 'crash loop');
    const [rollback] = await api.jobsSettleAt(
      1,
      `&deploymentId=${deployment}&status=queued`,
      'the canary rolled back to 1.0.0',
    );
    const rolledBack = await release(rollback!.releaseId);
    expect(rolledBack.versionId).toBe(v1);
    expect(rolledBack.resourceId).toBe(canary!.resourceId);
    const [halted] = await rolloutOf(deployment, v2);
    expect(halted!.state).toBe('halted');
    expect(halted!.halt!.reason).toBe('halted: 1 of 1 targets failed in wave canary (100 % ≥ 50 %)');
  }, 90_000);

  it('holds a wave for a person’s judgement: continue lets it start, rollback takes the earlier waves back', async () => {
    const deployment = await fleet('waves-judged', undefined, { bakeSeconds: 0, judgement: {} });
    const v1 = await api.version(deployment, '1.0.0');
    await succeed(await api.jobsSettleAt(1, `&deploymentId=${deployment}`, 'the canary job'));
    const awaiting = await eventually(
      async () => {
        const [rollout] = await rolloutOf(deployment, v1);
        return rollout?.awaitingJudgement ? rollout : undefined;
      },
      { what: 'the eu wave to wait for a judgement' },
    );
    expect(awaiting.awaitingJudgement!.wave).toBe(1);
    expect(awaiting.reason).toBe('wave eu (2 of 4) waits for a judgement: continue or roll back');
    await settled(stack, 'the stack to settle at the judgement');
    expect(await active(deployment)).toEqual([]);
    const judge = (version: string, decision: string, expected = [200]) =>
      api.send(
        'post',
        `/deployments/${deployment}/versions/${version}/rollout/judgement`,
        { decision, reason: 'dashboards are green' },
        expected,
      );
    await judge(v1, 'continue');
    await judge(v1, 'continue', [409]);
    await succeedAll(deployment, v1);
    expect((await rolloutOf(deployment, v1))[0]!.judgements).toMatchObject([
      { wave: 1, decision: 'continue', reason: 'dashboards are green' },
    ]);

    const v2 = await api.version(deployment, '2.0.0');
    const [canary] = await api.jobsSettleAt(
      1,
      `&deploymentId=${deployment}&status=queued`,
      'the 2.0.0 canary job',
    );
    await succeed([canary!]);
    await eventually(
      async () => ((await rolloutOf(deployment, v2))[0]?.awaitingJudgement ? true : undefined),
      {
        what: 'the 2.0.0 eu wave to wait for a judgement',
      },
    );
    const [aborted] = (await judge(v2, 'rollback')).rollouts as RolloutRead[];
    expect(aborted!.state).toBe('aborted');
    const [rollback] = await api.jobsSettleAt(
      1,
      `&deploymentId=${deployment}&status=queued`,
      'the canary rolled back to 1.0.0',
    );
    expect((await release(rollback!.releaseId)).versionId).toBe(v1);
    expect(rollback!.resourceId).toBe(canary!.resourceId);
  }, 120_000);

  it('takes a judgement only from the keys a wave names', async () => {
    const deployment = await fleet('waves-approvers', undefined, {
      bakeSeconds: 0,
      judgement: { approvers: ['release-manager'] },
    });
    const version = await api.version(deployment, '1.0.0');
    await succeed(await api.jobsSettleAt(1, `&deploymentId=${deployment}`, 'the canary job'));
    await eventually(
      async () => ((await rolloutOf(deployment, version))[0]?.awaitingJudgement ? true : undefined),
      {
        what: 'the eu wave to wait for a judgement',
      },
    );
    const refused = await stack.http
      .post(`${api.ws}/deployments/${deployment}/versions/${version}/rollout/judgement`)
      .set(stack.auth)
      .send({ decision: 'continue', reason: 'looks fine' })
      .expect(403);
    expect(refused.body.code).toBe('not_an_approver');
  }, 60_000);

  it('answers 404 for a version of another deployment, and 400 for a rule without waves', async () => {
    const deployment = await fleet('waves-errors');
    const other = await fleet('waves-other');
    const version = await api.version(other, '1.0.0');
    await stack.http
      .get(`${api.ws}/deployments/${deployment}/versions/${version}/rollout`)
      .set(stack.auth)
      .expect(404);
    const refused = await stack.http
      .post(`${api.ws}/policies`)
      .set(stack.auth)
      .send({ name: 'no waves', selector: 'true', rules: [{ waves: { waves: [] } }] })
      .expect(400);
    expect(refused.headers['content-type']).toMatch(/problem\+json/);
  }, 60_000);
});
