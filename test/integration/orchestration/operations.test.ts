import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { releaseStateQuery } from '../../../workflows/definitions';
import { workflowIds } from '../../../workflows/ids';
import { eventually } from '../../helpers/eventually';
import { recordsApi } from '../../helpers/orchestration';
import { settled } from '../../helpers/settled';
import { startTestStack, type TestStack } from '../../helpers/stack';

/** Job status reports, release operations, retries, verifications, target state and visibility. */
describe('release operations', () => {
  let stack: TestStack;
  let api: ReturnType<typeof recordsApi>;
  let probe: http.Server;
  let probeUrl: string;
  let probeStatus = 200;
  const probeAuthorizations: (string | undefined)[] = [];

  /** A deployment with `count` resources in one environment, in a system of its own. */
  async function lane(label: string, agent: string, count = 1) {
    const system = await api.system(label);
    const environment = await api.environment(label, `resource.metadata["lane"] == "${label}"`, system);
    const deployment = await api.deployment(label, system, { jobAgents: [{ ref: agent }] });
    const resources = [];
    for (let n = 0; n < count; n++)
      resources.push(await api.resource(`${label}-${n}`, 'service', { lane: label }));
    return { deployment, environment, resources };
  }

  beforeAll(async () => {
    stack = await startTestStack();
    api = recordsApi(stack);
    await api.agent('puller', 'http-pull');
    probe = http.createServer((req, res) => {
      probeAuthorizations.push(req.headers.authorization);
      res.writeHead(probeStatus, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ healthy: probeStatus === 200 }));
    });
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    probeUrl = `http://127.0.0.1:${(probe.address() as AddressInfo).port}/health`;
  });
  afterAll(async () => {
    await stack.close();
    await new Promise((resolve) => probe.close(resolve));
  });

  describe('agent routing', () => {
    it('routes each resource to the agent entries whose selector matches it, and names an agent it cannot find', async () => {
      await api.agent('k8s', 'http-pull');
      await api.agent('vm', 'http-pull');
      const system = await api.system('routing');
      await api.environment('routing', 'resource.metadata["lane"] == "routing"', system);
      const deployment = await api.deployment('routing', system, {
        jobAgents: [
          { ref: 'k8s', selector: 'resource.metadata["cluster"] == "kubernetes"' },
          { ref: 'vm', selector: 'resource.metadata["cluster"] == "vm"' },
          { ref: 'ghost', selector: 'resource.metadata["cluster"] == "ghost"' },
        ],
      });
      const pod = await api.resource('routing-pod', 'service', { lane: 'routing', cluster: 'kubernetes' });
      const box = await api.resource('routing-box', 'service', { lane: 'routing', cluster: 'vm' });
      const lost = await api.resource('routing-lost', 'service', { lane: 'routing', cluster: 'ghost' });
      await api.version(deployment, '1.0.0');
      const jobs = await api.jobsSettleAt(3, `&deploymentId=${deployment}`);
      const agentOf = (resource: string) => jobs.find((job) => job.resourceId === resource)!;
      expect((agentOf(pod).dispatchContext.jobAgent as { name: string }).name).toBe('k8s');
      expect((agentOf(box).dispatchContext.jobAgent as { name: string }).name).toBe('vm');
      expect(agentOf(lost)).toMatchObject({
        status: 'invalid_job_agent',
        message: 'job agent "ghost" was not found',
      });
    });
  });

  describe('status reports', () => {
    it('accepts legacy and camelCase spellings, sets startedAt and completedAt once, and refuses moves out of a final status', async () => {
      const { deployment } = await lane('status', 'puller');
      await api.version(deployment, '1.0.0');
      const [job] = await api.jobsSettleAt(1, `&deploymentId=${deployment}`);
      const running = await api.report(job!.id, 'inProgress', 'deploying');
      expect(running).toMatchObject({ status: 'in_progress', message: 'deploying' });
      expect(running).not.toHaveProperty('completedAt');
      expect(running.startedAt).toEqual(expect.any(String));
      const done = await api.report(job!.id, 'completed', 'done');
      expect(done).toMatchObject({ status: 'successful', message: 'done', startedAt: running.startedAt });
      const again = await api.report(job!.id, 'successful');
      expect(again.completedAt).toBe(done.completedAt);

      const refused = await stack.http
        .put(`${api.ws}/jobs/${job!.id}/status`)
        .set(stack.auth)
        .send({ status: 'failed' })
        .expect(409);
      expect(refused.body.code).toBe('invalid_status_move');
      const unknown = await stack.http
        .put(`${api.ws}/jobs/${job!.id}/status`)
        .set(stack.auth)
        .send({ status: 'exploded' })
        .expect(400);
      expect(unknown.body.errors[0].path).toBe('body.status');
    });
  });

  describe('cancel and redeploy', () => {
    it('cancels a release and its queued job, then frees the target for a newer version', async () => {
      const { deployment } = await lane('cancel', 'puller');
      await api.version(deployment, '1.0.0');
      const [job] = await api.jobsSettleAt(1, `&deploymentId=${deployment}`);
      const cancelled = await api.send('post', `/releases/${job!.releaseId}/cancel`, {}, [202]);
      expect(cancelled.phase).toBe('cancelled');
      expect((await api.get<{ status: string }>(`/jobs/${job!.id}`)).status).toBe('cancelled');
      await stack.http.post(`${api.ws}/releases/${job!.releaseId}/cancel`).set(stack.auth).expect(409);

      await api.version(deployment, '2.0.0');
      const [next] = await api.jobsSettleAt(
        1,
        `&deploymentId=${deployment}&status=queued`,
        'the next version to run',
      );
      expect(next!.releaseId).not.toBe(job!.releaseId);
    });

    it('redeploys a finished release with a new job, and refuses while it runs', async () => {
      const { deployment } = await lane('redeploy', 'puller');
      await api.version(deployment, '1.0.0');
      const [job] = await api.jobsSettleAt(1, `&deploymentId=${deployment}`);
      await stack.http.post(`${api.ws}/releases/${job!.releaseId}/redeploy`).set(stack.auth).expect(409);
      await api.report(job!.id, 'successful');
      await api.releaseWith(
        (r) => r.id === job!.releaseId && r.phase === 'succeeded',
        'the release to succeed',
      );

      await api.send('post', `/releases/${job!.releaseId}/redeploy`, {}, [202]);
      const [second] = await api.jobsSettleAt(
        1,
        `&releaseId=${job!.releaseId}&status=queued`,
        'the redeployed job',
      );
      expect(second!.id).not.toBe(job!.id);
      expect(await api.jobs(`&releaseId=${job!.releaseId}`)).toHaveLength(2);
      expect((await api.get<{ attempt: number }>(`/jobs/${second!.id}`)).attempt).toBe(2);
    });
  });

  describe('redeploy under policies (docs/api.md "Releases and jobs")', () => {
    it('never skips a gate unless the request overrides it with a reason, recorded on the release', async () => {
      const { deployment } = await lane('redeploy-gated', 'puller');
      await api.policy({
        name: 'approval for redeploy-gated',
        selector: 'environment.name == "redeploy-gated"',
        rules: [{ anyApproval: { minApprovals: 1 } }],
      });
      await api.version(deployment, '1.0.0');
      const waiting = await api.releaseWith(
        (r) => r.deploymentId === deployment && r.evaluation?.decision === 'wait',
        'the release to wait for its approval',
      );
      const redeploy = (body?: object) => {
        const request = stack.http.post(`${api.ws}/releases/${waiting.id}/redeploy`).set(stack.auth);
        return body ? request.send(body) : request;
      };

      const plain = await redeploy();
      expect(plain.status).toBe(409);
      expect(plain.body.code).toBe('release_not_run');
      const reasonless = await redeploy({ overridePolicies: true });
      expect(reasonless.status).toBe(400);
      expect(await api.jobs(`&deploymentId=${deployment}`)).toEqual([]);

      const overridden = await redeploy({ overridePolicies: true, reason: 'hotfix for incident 42' });
      expect(overridden.status).toBe(202);
      expect(overridden.body.redeploys).toEqual([
        { at: expect.any(String), by: expect.any(String), overrideReason: 'hotfix for incident 42' },
      ]);
      expect(overridden.body.phaseReason).toContain('hotfix for incident 42');
      const [job] = await api.jobsSettleAt(
        1,
        `&deploymentId=${deployment}&status=queued`,
        'the overriding job',
      );
      await api.report(job!.id, 'successful');
      await api.releaseWith((r) => r.id === waiting.id && r.phase === 'succeeded', 'the release to succeed');

      // The release ran; a redeploy without an override waits for the approval again.
      const again = await redeploy();
      expect(again.status).toBe(202);
      await api.releaseWith(
        (r) => r.id === waiting.id && r.phase !== 'running' && r.evaluation?.decision === 'wait',
        'the redeploy to wait for its approval',
      );
      await settled(stack);
      expect(await api.jobs(`&releaseId=${waiting.id}`)).toHaveLength(1);
      const shown = await api.get<{ redeploys: { overrideReason: string | null }[] }>(
        `/releases/${waiting.id}`,
      );
      expect(shown.redeploys.map((r) => r.overrideReason)).toEqual(['hotfix for incident 42', null]);
    });
  });

  describe('retries', () => {
    it('retries a failed job as the retry rule allows, then fails the release', async () => {
      await api.agent('failing', 'test-runner', { status: 'failure', message: 'boom' });
      const { deployment } = await lane('retry', 'failing');
      await api.policy({
        name: 'retry once',
        selector: 'deployment.slug == "retry"',
        rules: [{ retry: { maxRetries: 1 } }],
      });
      await api.version(deployment, '1.0.0');
      const failed = await api.releaseWith(
        (r) => r.phase === 'failed' && r.releaseTargetKey.endsWith(deployment),
        'the release to fail',
      );
      const jobs = await api.jobs(`&releaseId=${failed.id}`);
      expect(jobs.map((job) => job.status)).toEqual(['failure', 'failure']);
      expect((await api.get<{ phaseReason: string }>(`/releases/${failed.id}`)).phaseReason).toMatch(
        /1 of 1 retries used/,
      );
    });

    it('gives a release without a retry rule one job', async () => {
      const { deployment } = await lane('once', 'failing');
      await api.version(deployment, '1.0.0');
      const failed = await api.releaseWith(
        (r) => r.phase === 'failed' && r.releaseTargetKey.endsWith(deployment),
        'the release to fail',
      );
      expect(await api.jobs(`&releaseId=${failed.id}`)).toHaveLength(1);
    });
  });

  describe('verification', () => {
    it('measures http and sleep metrics on durable timers, and succeeds the release when they pass', async () => {
      await api.agent('runner', 'test-runner', { status: 'successful' });
      const { deployment, resources } = await lane('verify', 'runner');
      const policyId = await api.policy({
        name: 'health check',
        selector: 'deployment.slug == "verify"',
        rules: [
          {
            verification: {
              metrics: [
                {
                  name: 'health',
                  intervalSeconds: 1,
                  count: 2,
                  provider: {
                    type: 'http',
                    url: probeUrl,
                    headers: { authorization: 'Bearer probe-secret-123' },
                  },
                  successCondition: 'result.statusCode == 200 && result.json.healthy',
                },
                {
                  name: 'settle',
                  intervalSeconds: 1,
                  count: 1,
                  provider: { type: 'sleep', durationSeconds: 1 },
                  successCondition: 'true',
                },
              ],
            },
          },
        ],
      });
      await api.version(deployment, '1.0.0');
      const release = await api.releaseWith(
        (r) => r.resourceId === resources[0] && r.phase === 'succeeded',
        'the verified release to succeed',
      );
      const key = `${resources[0]}-${release.environmentId}-${deployment}`;
      const state = await api.get<{
        currentRelease: { id: string };
        desiredRelease: { id: string };
        latestJob: {
          job: { status: string };
          verifications: { status: string; measurements: { metric: string; passed: boolean }[] }[];
        };
      }>(`/release-targets/${key}/state`);
      expect(state.currentRelease.id).toBe(release.id);
      expect(state.desiredRelease.id).toBe(release.id);
      expect(state.latestJob.job.status).toBe('successful');
      expect(state.latestJob.verifications).toHaveLength(1);
      expect(state.latestJob.verifications[0]!.status).toBe('passed');
      expect(state.latestJob.verifications[0]!.measurements.map((m) => [m.metric, m.passed]).sort()).toEqual([
        ['health', true],
        ['health', true],
        ['settle', true],
      ]);

      const listed = await api.send(
        'post',
        '/release-targets/state',
        { deploymentId: deployment, environmentId: release.environmentId },
        [200],
      );
      expect(listed.total).toBe(1);
      expect(listed.items[0].state.currentRelease.id).toBe(release.id);
      expect(listed.items[0].state.currentRelease.version.tag).toBe('1.0.0');
      expect(listed.items[0].state.latestJob.status).toBe('successful');

      // Probe headers are sealed at rest, sent only with the probe, shown redacted
      // (docs/security.md "Encryption").
      expect(probeAuthorizations).toContain('Bearer probe-secret-123');
      const policy = await api.get<{
        rules: { verification: { metrics: { provider: { headers?: object } }[] } }[];
      }>(`/policies/${policyId}`);
      expect(policy.rules[0]!.verification.metrics[0]!.provider.headers).toEqual({
        authorization: { sensitive: true },
      });
      expect(JSON.stringify([state, listed, policy])).not.toContain('probe-secret-123');
      const stored = await stack.orm.em
        .fork()
        .getConnection()
        .execute<{ text: string }[]>(
          `SELECT (SELECT string_agg(rules::text, '') FROM policy) || (SELECT string_agg(metrics::text, '') FROM job_verification) AS text`,
        );
      expect(stored[0]!.text).not.toContain('probe-secret-123');
      // Written back as shown, the stored header is kept.
      await api.send('put', `/policies/${policyId}`, { name: 'health check', rules: policy.rules }, [202]);
      const kept = await stack.orm.em
        .fork()
        .getConnection()
        .execute<{ text: string }[]>(`SELECT rules::text AS text FROM policy WHERE id = ?`, [policyId]);
      expect(kept[0]!.text).toContain('fd2:');
    });

    it('fails the release when a verification fails', async () => {
      probeStatus = 503;
      const { deployment } = await lane('unhealthy', 'runner');
      await api.policy({
        name: 'unhealthy check',
        selector: 'deployment.slug == "unhealthy"',
        rules: [
          {
            verification: {
              metrics: [
                {
                  name: 'health',
                  intervalSeconds: 1,
                  count: 1,
                  provider: { type: 'http', url: probeUrl },
                  successCondition: 'result.statusCode == 200',
                },
              ],
            },
          },
        ],
      });
      await api.version(deployment, '1.0.0');
      const failed = await api.releaseWith(
        (r) => r.phase === 'failed' && r.releaseTargetKey.endsWith(deployment),
        'the unverified release to fail',
      );
      expect((await api.get<{ phaseReason: string }>(`/releases/${failed.id}`)).phaseReason).toMatch(
        /verification .* failed/,
      );
    });
  });

  describe('visibility', () => {
    it('finds a release workflow by its search attributes, and answers the state query', async () => {
      const { deployment, resources } = await lane('visible', 'puller');
      await api.version(deployment, '1.0.0');
      const [job] = await api.jobsSettleAt(1, `&deploymentId=${deployment}`);
      const query = `FlightdeckReleaseId = '${job!.releaseId}' AND FlightdeckResourceId = '${resources[0]}' AND FlightdeckJobIds = '${job!.id}'`;
      const found = await eventually(
        async () => {
          const executions = [];
          for await (const execution of stack.temporal.workflow.list({ query })) executions.push(execution);
          return executions.length > 0 ? executions : undefined;
        },
        { what: 'the release workflow in visibility' },
      );
      expect(found.map((e) => e.workflowId)).toEqual([workflowIds.release(job!.releaseId)]);

      const view = await stack.temporal.workflow
        .getHandle(workflowIds.release(job!.releaseId))
        .query(releaseStateQuery);
      expect(view).toMatchObject({
        releaseId: job!.releaseId,
        phase: 'running',
        attempt: 1,
        jobIds: [job!.id],
      });
      expect(view.evaluation?.decision).toBe('proceed');
    });
  });
});
