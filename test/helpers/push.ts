import { randomUUID } from 'node:crypto';
import { eventually } from './eventually';
import { recordsApi, type Job } from './orchestration';
import type { TestStack } from './stack';

/** Builders for push-agent tests: one agent, and one job for it made by the real release flow. */

/** A job as `GET /jobs/{id}` answers it: `externalId` absent until the agent links its run. */
export type PushJob = Job & { externalId?: string };

export function pushAgents(stack: TestStack, systemId: string) {
  const api = recordsApi(stack);
  const jobOf = (jobId: string) => api.get<PushJob>(`/jobs/${jobId}`);
  return {
    api,
    jobOf,
    /**
     * An agent `name` of `type`, an environment and a deployment of its own with `variables` (a
     * `{secret: value}` one is sensitive), one resource with `metadata`, version 1.0.0: its job.
     */
    async deploy(
      name: string,
      type: string,
      config: object,
      options: { metadata?: Record<string, string>; variables?: Record<string, unknown> } = {},
    ): Promise<{ job: Job; agentId: string; deploymentId: string }> {
      const agentId = await api.agent(name, type, config);
      await api.environment(`env-${name}`, `resource.metadata["lane"] == "${name}"`, systemId);
      const deploymentId = await api.deployment(`svc-${name}`, systemId, {
        resourceSelector: `resource.metadata["lane"] == "${name}"`,
        jobAgents: [{ ref: name }],
      });
      for (const [key, value] of Object.entries(options.variables ?? {})) {
        const sensitive = typeof value === 'object' && value !== null && 'secret' in value;
        await api.send(
          'put',
          `/deployments/${deploymentId}/variables/${randomUUID()}`,
          { key, defaultValue: sensitive ? (value as { secret: unknown }).secret : value, sensitive },
          [202],
        );
      }
      await api.resource(`${name}-node`, 'service', { lane: name, ...options.metadata });
      await api.version(deploymentId, '1.0.0');
      const [job] = await api.jobsSettleAt(1, `&jobAgentId=${agentId}`, `the job of ${name}`);
      return { job: job!, agentId, deploymentId };
    },
    /** Waits for the job's release to reach `phase`; then the target's current release, if it succeeded. */
    async releaseEnds(job: Job, phase: 'succeeded' | 'failed'): Promise<string | null> {
      const release = await api.releaseWith(
        (candidate) => candidate.id === job.releaseId && candidate.phase === phase,
        `the release to end ${phase}`,
      );
      const state = await api.get<{ currentRelease: { id: string } | null }>(
        `/release-targets/${release.releaseTargetKey}/state`,
      );
      return state.currentRelease?.id ?? null;
    },
    waitForJob(jobId: string, predicate: (job: PushJob) => boolean, what: string): Promise<PushJob> {
      return eventually(
        async () => {
          const job = await jobOf(jobId);
          return predicate(job) ? job : undefined;
        },
        { what, timeoutMs: 60_000 },
      );
    },
  };
}
