import type { EntityManager } from '@mikro-orm/postgresql';
import { planReleaseJobs, type PlannedJob } from '../../domain/jobPlan';
import { isTerminalJobStatus } from '../../domain/jobStatus';
import { isTerminalReleasePhase } from '../../domain/releases';
import { newId } from '../../db/ids';
import { loadPlanInputs } from '../planner/planInputs';
import { rollbackVariables } from '../planner/rollbackVariables';
import type { SecretBox } from '../../db/secrets';
import { jobSecrets, sealedValue } from '../../db/sensitiveValues';
import { uuidArray } from '../../db/sql';
import type { JobRef } from '../../domain/orchestration';
import { RELEASE_ROW_COLUMNS, type ReleaseRow } from '../planner/releaseRows';
import type { StartJobsResult } from '../../domain/activityResults';

/**
 * docs/behaviour.md "Flow" step 4: the jobs of releases that may proceed, written with their release target's
 * slot. The slot (`release_target_state.active_release_id`) is taken by compare and set, so at most
 * one release has active jobs on a target. The plan itself is pure (domain/jobPlan.ts); this module
 * loads what it needs and writes it, for one release (`startReleaseJobs`, a workflow whose gates
 * opened) or a whole batch (`createJobs`, the fan-out), with the same few statements.
 */

const targetOrder = (a: ReleaseRow, b: ReleaseRow) =>
  `${a.resource_id}/${a.environment_id}/${a.deployment_id}`.localeCompare(
    `${b.resource_id}/${b.environment_id}/${b.deployment_id}`,
  );

/**
 * Takes the target slot of each release, by compare and set; returns the ids of the releases that
 * hold their target now. Rows are locked in one order (by target), so concurrent batches never
 * deadlock on each other's targets.
 */
export async function takeTargetSlots(
  tx: EntityManager,
  releases: readonly ReleaseRow[],
): Promise<Set<string>> {
  if (releases.length === 0) return new Set();
  const sorted = [...releases].sort(targetOrder);
  const column = (pick: (release: ReleaseRow) => string) => uuidArray(sorted.map(pick));
  const held = await tx.execute<{ active_release_id: string }[]>(
    `INSERT INTO release_target_state (resource_id, environment_id, deployment_id, workspace_id, active_release_id, desired_release_id)
     SELECT resource_id, environment_id, deployment_id, workspace_id, release_id, release_id
       FROM unnest(?::uuid[], ?::uuid[], ?::uuid[], ?::uuid[], ?::uuid[]) WITH ORDINALITY
            AS s(resource_id, environment_id, deployment_id, workspace_id, release_id, n)
      ORDER BY n
     ON CONFLICT (resource_id, environment_id, deployment_id) DO UPDATE
       SET active_release_id = EXCLUDED.active_release_id, desired_release_id = EXCLUDED.desired_release_id, updated_at = now()
       WHERE release_target_state.active_release_id IS NULL
          OR release_target_state.active_release_id = EXCLUDED.active_release_id
     RETURNING active_release_id`,
    [
      column((r) => r.resource_id),
      column((r) => r.environment_id),
      column((r) => r.deployment_id),
      column((r) => r.workspace_id),
      column((r) => r.id),
    ],
  );
  return new Set(held.map((row) => row.active_release_id));
}

/** A release's planned jobs, at the attempt they are made for. */
interface PlannedRelease {
  release: ReleaseRow;
  attempt: number;
  jobs: PlannedJob[];
}

/**
 * Plans and writes the jobs of releases whose slot is held: the jobs and their verifications, the
 * releases moved to `running`, each target's latest job. Returns each release's jobs.
 */
export async function createJobs(
  tx: EntityManager,
  box: SecretBox,
  releases: readonly { release: ReleaseRow; attempt: number }[],
): Promise<Map<string, JobRef[]>> {
  if (releases.length === 0) return new Map();
  const inputs = await loadPlanInputs(
    tx,
    box,
    releases.map(({ release }) => release),
  );
  const restored = await rollbackVariables(
    tx,
    box,
    releases.map(({ release }) => release.id),
  );
  const planned = releases.map(({ release, attempt }): PlannedRelease => {
    const secrets = jobSecrets(box, { workspaceId: release.workspace_id, releaseId: release.id });
    const tools = { newId: () => newId(), seal: (value: unknown) => sealedValue(secrets, value) };
    const restoredVariables = restored.get(release.id);
    const input = { ...inputs.get(release.id)!, ...(restoredVariables ? { restoredVariables } : {}) };
    return { release, attempt, jobs: planReleaseJobs(input, tools) };
  });
  await insertJobs(tx, planned);
  await insertVerifications(tx, planned);
  await markRunning(tx, planned);
  return new Map(
    planned.map(({ release, jobs }) => [
      release.id,
      jobs.map((job) => ({ id: job.id, status: job.status, agentType: job.agent?.type ?? null })),
    ]),
  );
}

async function insertJobs(tx: EntityManager, planned: PlannedRelease[]): Promise<void> {
  const jobRows = planned.flatMap(({ release, attempt, jobs }) =>
    jobs.map((job) => ({
      id: job.id,
      workspace_id: release.workspace_id,
      release_id: release.id,
      deployment_id: release.deployment_id,
      environment_id: release.environment_id,
      resource_id: release.resource_id,
      job_agent_id: job.agent?.id ?? null,
      agent_type: job.agent?.type ?? null,
      agent_entry: job.agentEntry,
      attempt,
      status: job.status,
      message: job.message,
      job_agent_config: job.config,
      dispatch_context: job.dispatchContext,
      ended: isTerminalJobStatus(job.status),
    })),
  );
  await tx.execute(
    `INSERT INTO job (id, workspace_id, release_id, deployment_id, environment_id, resource_id, job_agent_id, agent_type,
                      agent_entry, attempt, status, message, job_agent_config, dispatch_context, completed_at)
     SELECT id, workspace_id, release_id, deployment_id, environment_id, resource_id, job_agent_id, agent_type,
            agent_entry, attempt, status, message, job_agent_config, dispatch_context, CASE WHEN ended THEN now() END
       FROM jsonb_to_recordset(?::jsonb) AS j(id uuid, workspace_id uuid, release_id uuid, deployment_id uuid,
            environment_id uuid, resource_id uuid, job_agent_id uuid, agent_type text, agent_entry int, attempt int,
            status text, message text, job_agent_config jsonb, dispatch_context jsonb, ended boolean)`,
    [JSON.stringify(jobRows)],
  );
}

async function insertVerifications(tx: EntityManager, planned: PlannedRelease[]): Promise<void> {
  const verificationRows = planned.flatMap(({ release, jobs }) =>
    jobs.flatMap((job) =>
      job.verifications.map((v) => ({
        id: v.id,
        workspace_id: release.workspace_id,
        job_id: job.id,
        policy_id: v.policyId,
        rule_id: v.ruleId,
        trigger: v.triggerOn,
        metrics: v.metrics,
      })),
    ),
  );
  if (verificationRows.length === 0) return;
  await tx.execute(
    `INSERT INTO job_verification (id, workspace_id, job_id, policy_id, rule_id, trigger, metrics)
     SELECT id, workspace_id, job_id, policy_id, rule_id, trigger, metrics
       FROM jsonb_to_recordset(?::jsonb) AS v(id uuid, workspace_id uuid, job_id uuid, policy_id uuid, rule_id uuid,
            trigger text, metrics jsonb)`,
    [JSON.stringify(verificationRows)],
  );
}

/** The releases moved to `running`, and each target's latest job. */
async function markRunning(tx: EntityManager, planned: PlannedRelease[]): Promise<void> {
  const moved = planned.map(({ release, attempt, jobs }) => ({
    id: release.id,
    reason: `attempt ${attempt}: ${jobs.length} job(s) created`,
    resource_id: release.resource_id,
    environment_id: release.environment_id,
    deployment_id: release.deployment_id,
    latest_job_id: jobs[jobs.length - 1]!.id,
  }));
  await tx.execute(
    `WITH moved AS (SELECT * FROM jsonb_to_recordset(?::jsonb) AS m(id uuid, reason text, resource_id uuid,
                      environment_id uuid, deployment_id uuid, latest_job_id uuid)),
          running AS (
            UPDATE release r SET phase = 'running', phase_reason = moved.reason, redeploy_requested_at = NULL, redeploy_override_reason = NULL, updated_at = now()
              FROM moved WHERE r.id = moved.id)
     UPDATE release_target_state s SET latest_job_id = moved.latest_job_id, updated_at = now()
       FROM moved
      WHERE s.resource_id = moved.resource_id AND s.environment_id = moved.environment_id
        AND s.deployment_id = moved.deployment_id`,
    [JSON.stringify(moved)],
  );
}

/**
 * The jobs of one release whose gates opened: `busy` (wait to be woken) when another release holds
 * the target. Idempotent per attempt: a retry after a crash returns the jobs the first try created.
 */
export async function startReleaseJobs(
  em: EntityManager,
  box: SecretBox,
  releaseId: string,
  attempt: number,
): Promise<StartJobsResult> {
  return em.transactional(async (tx) => {
    const [release] = await tx.execute<ReleaseRow[]>(
      `SELECT ${RELEASE_ROW_COLUMNS} FROM release WHERE id = ? FOR UPDATE`,
      [releaseId],
    );
    if (!release || isTerminalReleasePhase(release.phase)) return { outcome: 'finished' };
    const existing = await tx.execute<JobRef[]>(
      `SELECT id, status, agent_type AS "agentType" FROM job WHERE release_id = ? AND attempt = ? ORDER BY agent_entry NULLS FIRST`,
      [releaseId, attempt],
    );
    if (existing.length > 0) return { outcome: 'started', attempt, jobs: existing };
    if (!(await takeTargetSlots(tx, [release])).has(release.id)) {
      const [holder] = await tx.execute<{ active_release_id: string | null }[]>(
        `SELECT active_release_id FROM release_target_state WHERE resource_id = ? AND environment_id = ? AND deployment_id = ?`,
        [release.resource_id, release.environment_id, release.deployment_id],
      );
      return { outcome: 'busy', holder: holder?.active_release_id ?? null };
    }
    const jobs = await createJobs(tx, box, [{ release, attempt }]);
    return { outcome: 'started', attempt, jobs: jobs.get(release.id)! };
  });
}
