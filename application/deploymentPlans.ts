import type { EntityManager } from '@mikro-orm/postgresql';
import { summarize, type PlanSummary, type PlanTarget } from '../domain/deploymentPlans';
import { NotFoundError, ValidationError } from '../domain/errors';
import { DeploymentSchema } from '../db/entities';
import { newId } from '../db/ids';
import { type ReleaseRow, type ProposedVersion, planTargets, type PlanTargetRow } from '../engine/planner';
import type { SecretBox } from '../db/secrets';
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
      const targets = await tx.execute<PlanTargetRow[]>(
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
      const planned = await planTargets(tx, this.secrets, deploymentId, targets, releases, proposed);
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
