import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import {
  planResult,
  renderJobInputs,
  summarize,
  type PlanSummary,
  type PlanTarget,
} from '../../domain/deploymentPlans';
import { NotFoundError, ValidationError } from '../../domain/errors';
import { planReleaseJobs } from '../../domain/jobPlan';
import { REDACTED } from '../../domain/sensitive';
import { DeploymentSchema } from '../entities';
import { newId } from '../ids';
import { loadPlanInputs, type ProposedVersion, type ReleaseRow } from '../jobCreation';
import type { SecretBox } from '../secrets';
import { redactTree } from '../sensitiveValues';
import { findOwned } from './common';

/** The targets one plan covers, at most: a plan is computed within its request. */
export const MAX_PLAN_TARGETS = 1000;

const NO_VERSION = '00000000-0000-0000-0000-000000000000';

export interface ProposedVersionInput {
  tag: string;
  name?: string;
  config?: Record<string, unknown>;
  jobAgentConfig?: Record<string, unknown>;
  metadata?: Record<string, string>;
}

export interface DeploymentPlan {
  id: string;
  deploymentId: string;
  status: 'completed';
  version: { tag: string; name: string; metadata: Record<string, string> };
  metadata: Record<string, string>;
  summary: PlanSummary;
  targets: PlanTarget[];
  createdAt: string;
}

interface TargetRow {
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
 * Ctrlplane's deployment plans: the jobs a proposed version (not stored) would get on each of the
 * deployment's release targets, computed as job creation computes them but dispatching and storing
 * nothing of them, against the jobs of each target's current release. Kept for `GET`.
 */
export class DeploymentPlanStore {
  constructor(
    private readonly em: EntityManager,
    private readonly secrets: SecretBox,
  ) {}

  create(
    workspaceId: string,
    deploymentId: string,
    version: ProposedVersionInput,
    metadata: Record<string, string>,
  ): Promise<DeploymentPlan> {
    return this.em.transactional(async (tx) => {
      await findOwned(tx, DeploymentSchema, workspaceId, deploymentId, 'deployment');
      const targets = await tx.execute<TargetRow[]>(
        `SELECT t.resource_id, t.environment_id, r.name AS resource_name, e.name AS environment_name,
                s.current_release_id
           FROM release_target t
           JOIN resource r ON r.id = t.resource_id
           JOIN environment e ON e.id = t.environment_id
           LEFT JOIN release_target_state s ON s.resource_id = t.resource_id AND s.environment_id = t.environment_id
                                           AND s.deployment_id = t.deployment_id
          WHERE t.deployment_id = ? ORDER BY e.name, r.name, t.resource_id LIMIT ?`,
        [deploymentId, MAX_PLAN_TARGETS + 1],
      );
      if (targets.length > MAX_PLAN_TARGETS) {
        throw new ValidationError(
          `The deployment has more than ${MAX_PLAN_TARGETS} release targets to plan`,
          [{ path: 'deploymentId', message: `at most ${MAX_PLAN_TARGETS} targets per plan` }],
        );
      }
      const now = new Date().toISOString();
      // A target's would-be release takes its current release's id, so the release context in the
      // configuration differs only where the version does.
      const releases: ReleaseRow[] = targets.map((target) => ({
        id: target.current_release_id ?? newId(),
        workspace_id: workspaceId,
        deployment_id: deploymentId,
        environment_id: target.environment_id,
        resource_id: target.resource_id,
        version_id: NO_VERSION,
        phase: 'pending',
        created_at: now,
      }));
      const proposed: ProposedVersion = {
        id: NO_VERSION,
        tag: version.tag,
        name: version.name || version.tag,
        status: 'ready',
        config: version.config ?? {},
        jobAgentConfig: version.jobAgentConfig ?? {},
        metadata: version.metadata ?? {},
        createdAt: now,
      };
      const inputs = await loadPlanInputs(tx, this.secrets, releases, proposed);
      const current = await this.currentJobs(tx, targets);
      const tools = { newId, seal: () => REDACTED };
      const planned: PlanTarget[] = targets.map((target, index) => {
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
      const plan: DeploymentPlan = {
        id: newId(),
        deploymentId,
        status: 'completed',
        version: { tag: proposed.tag, name: proposed.name ?? proposed.tag, metadata: proposed.metadata },
        metadata,
        summary: summarize(planned),
        targets: planned,
        createdAt: now,
      };
      await tx.execute(
        `INSERT INTO deployment_plan (id, workspace_id, deployment_id, status, version, metadata, summary, targets, created_at)
         VALUES (?, ?, ?, ?, ?::jsonb, ?::jsonb, ?::jsonb, ?::jsonb, ?)`,
        [
          plan.id,
          workspaceId,
          deploymentId,
          plan.status,
          JSON.stringify(plan.version),
          JSON.stringify(metadata),
          JSON.stringify(plan.summary),
          JSON.stringify(plan.targets),
          now,
        ],
      );
      return plan;
    });
  }

  /** The latest attempt's job of each agent entry of the targets' current releases. */
  private async currentJobs(tx: EntityManager, targets: TargetRow[]): Promise<Map<string, CurrentJob>> {
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

  async get(workspaceId: string, deploymentId: string, planId: string): Promise<DeploymentPlan> {
    const [row] = await this.em.execute<(Omit<DeploymentPlan, 'createdAt'> & { created_at: Date })[]>(
      `SELECT id, deployment_id AS "deploymentId", status, version, metadata, summary, targets, created_at
         FROM deployment_plan WHERE id = ? AND workspace_id = ? AND deployment_id = ?`,
      [planId, workspaceId, deploymentId],
    );
    if (!row) throw new NotFoundError('deployment plan', planId);
    const { created_at: createdAt, ...plan } = row;
    return { ...plan, createdAt: new Date(createdAt).toISOString() };
  }
}
