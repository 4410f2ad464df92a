import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { planResult, renderJobInputs, type PlanTarget } from '../../domain/deploymentPlans';
import { planReleaseJobs } from '../../domain/jobPlan';
import { REDACTED } from '../../domain/sensitive';
import { newId } from '../../db/ids';
import type { ReleaseRow } from './releaseRows';
import { loadPlanInputs, type ProposedVersion } from './planInputs';
import type { SecretBox } from '../../db/secrets';
import { redactTree } from '../../db/sensitiveValues';

/** A release target as a plan shows it, with the release running there now. */
export interface PlanTargetRow {
  resource_id: string;
  environment_id: string;
  resource_name: string;
  environment_name: string;
  current_release_id: string | null;
}

interface CurrentJob {
  release_id: string;
  agent_entry: number | null;
  job_agent_config: Record<string, unknown>;
  variables: Record<string, unknown> | null;
}

const hash = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * What releases would run on their targets (`releases[i]` on `targets[i]`), computed as job creation
 * computes jobs (of `proposed`, a version that is not stored, when given) but dispatching and storing
 * nothing, each job compared with the one of the target's current release for the same agent
 * entry. Secrets show redacted (or as `seal` writes them). Used by deployment plans, by plan
 * validation rules and by the digests approvals are bound to.
 */
export async function planTargets(
  tx: EntityManager,
  box: SecretBox,
  deploymentId: string,
  targets: readonly PlanTargetRow[],
  releases: readonly ReleaseRow[],
  proposed?: ProposedVersion,
  seal: (value: unknown) => unknown = () => REDACTED,
): Promise<PlanTarget[]> {
  const current = await currentJobs(tx, targets);
  const inputs = await loadPlanInputs(tx, box, releases, proposed);
  const tools = { newId, seal };
  return targets.map((target, index) => {
    const release = releases[index]!;
    const results = planReleaseJobs(inputs.get(release.id)!, tools).map((job) => {
      const was = target.current_release_id
        ? current.get(`${target.current_release_id}/${job.agentEntry ?? 'none'}`)
        : undefined;
      const proposedText =
        job.status === 'invalid_job_agent'
          ? ''
          : renderJobInputs({ config: job.config, variables: job.dispatchContext.variables });
      const currentText = was
        ? renderJobInputs({
            config: redactTree(was.job_agent_config),
            variables: redactTree(was.variables ?? {}),
          })
        : '';
      const id = `${target.resource_id}-${target.environment_id}-${deploymentId}/${job.agentEntry ?? 'none'}`;
      return planResult(
        id,
        currentText,
        proposedText,
        job.status === 'invalid_job_agent' ? job.message : null,
        hash(proposedText),
      );
    });
    return {
      environmentId: target.environment_id,
      environmentName: target.environment_name,
      resourceId: target.resource_id,
      resourceName: target.resource_name,
      hasChanges: results.some((result) => result.hasChanges),
      results,
    };
  });
}

/** The latest attempt's job of each agent entry of the targets' current releases. */
async function currentJobs(
  tx: EntityManager,
  targets: readonly PlanTargetRow[],
): Promise<Map<string, CurrentJob>> {
  const releaseIds = targets.flatMap((target) =>
    target.current_release_id ? [target.current_release_id] : [],
  );
  if (releaseIds.length === 0) return new Map();
  const rows = await tx.execute<CurrentJob[]>(
    `SELECT DISTINCT ON (release_id, agent_entry) release_id, agent_entry, job_agent_config,
            dispatch_context->'variables' AS variables
       FROM job WHERE release_id IN (SELECT jsonb_array_elements_text(?::jsonb)::uuid)
      ORDER BY release_id, agent_entry, attempt DESC, created_at DESC`,
    [JSON.stringify(releaseIds)],
  );
  return new Map(rows.map((row) => [`${row.release_id}/${row.agent_entry ?? 'none'}`, row]));
}
