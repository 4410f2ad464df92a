import type { EntityManager } from '@mikro-orm/postgresql';
import { groupBy } from '../../domain/grouping';

/** One deployment × environment cell of the rollout board. */
export interface BoardCell {
  deploymentId: string;
  environmentId: string;
  targets: number;
  /** Versions running on the cell's targets (their current releases), with how many run each. */
  current: { tag: string; targets: number }[];
  /** The versions the targets' newest releases deploy (where each target is headed), with how many. */
  desired: { tag: string; targets: number }[];
  /** Targets by the phase of their newest release (`none` without one). */
  states: Record<string, number>;
  /** Why pending releases wait: each reason with how many releases give it. */
  waiting: { reason: string; releases: number }[];
  /** Jobs that have not ended. */
  activeJobs: {
    id: string;
    status: string;
    releaseId: string;
    agent: { id: string; name: string } | null;
    resource: string;
  }[];
}

export interface RolloutBoard {
  deployments: {
    id: string;
    name: string;
    slug: string;
    latestVersion: { id: string; tag: string; rolloutStatus: string | null; releaseCount: number } | null;
  }[];
  environments: { id: string; name: string }[];
  cells: BoardCell[];
}

/** Active jobs shown per cell, at most. */
const JOBS_PER_CELL = 10;
/** Wait reasons shown per cell, at most. */
const REASONS_PER_CELL = 5;

/** A board cell's key: its deployment and environment. */
const cellKey = (row: { deploymentId: string; environmentId: string }) =>
  `${row.deploymentId}/${row.environmentId}`;

/**
 * The rollout board of a workspace: its deployments × environments, each cell's targets with their
 * current and desired versions, states, waiting gates and active jobs. A few grouped queries,
 * whatever the number of targets.
 */
export class RolloutBoardStore {
  constructor(private readonly em: EntityManager) {}

  async board(workspaceId: string): Promise<RolloutBoard> {
    const deployments = await this.deploymentsWithLatestVersion(workspaceId);
    const environments = await this.em.execute<RolloutBoard['environments']>(
      `SELECT id, name FROM environment WHERE workspace_id = ? ORDER BY name, id`,
      [workspaceId],
    );
    const cells = await this.cellCounts(workspaceId);
    const waiting = groupBy(await this.waitingReasons(workspaceId), cellKey);
    const jobs = groupBy(await this.activeJobs(workspaceId), cellKey);
    return {
      deployments,
      environments,
      cells: cells.map((cell) => ({
        ...cell,
        states: cell.states ?? {},
        waiting: (waiting.get(cellKey(cell)) ?? []).map((row) => ({ reason: row.reason, releases: row.n })),
        activeJobs: (jobs.get(cellKey(cell)) ?? []).map(({ id, status, releaseId, agent, resource }) => ({
          id,
          status,
          releaseId,
          agent,
          resource,
        })),
      })),
    };
  }

  private deploymentsWithLatestVersion(workspaceId: string): Promise<RolloutBoard['deployments']> {
    return this.em.execute<RolloutBoard['deployments']>(
      `SELECT d.id, d.name, d.slug,
              (SELECT json_build_object('id', v.id, 'tag', v.tag, 'rolloutStatus', v.rollout_status,
                                        'releaseCount', v.rollout_release_count)
                 FROM deployment_version v WHERE v.deployment_id = d.id AND v.status = 'ready'
                ORDER BY v.created_at DESC, v.id DESC LIMIT 1) AS "latestVersion"
         FROM deployment d WHERE d.workspace_id = ? ORDER BY d.name, d.id`,
      [workspaceId],
    );
  }

  /** Each cell's targets, grouped by current version, desired version and state. */
  private cellCounts(workspaceId: string): Promise<Omit<BoardCell, 'waiting' | 'activeJobs'>[]> {
    return this.em.execute<Omit<BoardCell, 'waiting' | 'activeJobs'>[]>(
      `WITH targets AS (
         SELECT t.deployment_id, t.environment_id, cv.tag AS current_tag, latest.tag AS desired_tag,
                coalesce(latest.phase, 'none') AS state
           FROM release_target t
           LEFT JOIN release_target_state s ON s.resource_id = t.resource_id AND s.environment_id = t.environment_id
                                           AND s.deployment_id = t.deployment_id
           LEFT JOIN release cr ON cr.id = s.current_release_id
           LEFT JOIN deployment_version cv ON cv.id = cr.version_id
           LEFT JOIN LATERAL (
             SELECT r.phase, v.tag FROM release r JOIN deployment_version v ON v.id = r.version_id
              WHERE r.resource_id = t.resource_id AND r.environment_id = t.environment_id
                AND r.deployment_id = t.deployment_id
              ORDER BY v.created_at DESC, v.id DESC LIMIT 1) latest ON true
          WHERE t.workspace_id = ?)
       SELECT deployment_id AS "deploymentId", environment_id AS "environmentId", count(*)::int AS targets,
              coalesce((SELECT json_agg(json_build_object('tag', tag, 'targets', n) ORDER BY n DESC, tag)
                          FROM (SELECT current_tag AS tag, count(*)::int AS n FROM targets i
                                 WHERE i.deployment_id = o.deployment_id AND i.environment_id = o.environment_id
                                   AND current_tag IS NOT NULL GROUP BY current_tag) c), '[]') AS current,
              coalesce((SELECT json_agg(json_build_object('tag', tag, 'targets', n) ORDER BY n DESC, tag)
                          FROM (SELECT desired_tag AS tag, count(*)::int AS n FROM targets i
                                 WHERE i.deployment_id = o.deployment_id AND i.environment_id = o.environment_id
                                   AND desired_tag IS NOT NULL GROUP BY desired_tag) d), '[]') AS desired,
              (SELECT json_object_agg(state, n)
                 FROM (SELECT state, count(*)::int AS n FROM targets i
                        WHERE i.deployment_id = o.deployment_id AND i.environment_id = o.environment_id
                        GROUP BY state) st) AS states
         FROM targets o GROUP BY deployment_id, environment_id`,
      [workspaceId],
    );
  }

  /** The most common reasons each cell's pending releases wait for. */
  private waitingReasons(workspaceId: string) {
    return this.em.execute<{ deploymentId: string; environmentId: string; reason: string; n: number }[]>(
      `SELECT deployment_id AS "deploymentId", environment_id AS "environmentId", reason, n FROM (
         SELECT deployment_id, environment_id, coalesce(phase_reason, 'not evaluated yet') AS reason, count(*)::int AS n,
                row_number() OVER (PARTITION BY deployment_id, environment_id ORDER BY count(*) DESC) AS rank
           FROM release WHERE workspace_id = ? AND phase = 'pending'
          GROUP BY deployment_id, environment_id, coalesce(phase_reason, 'not evaluated yet')) w
        WHERE rank <= ${REASONS_PER_CELL}`,
      [workspaceId],
    );
  }

  /** The oldest active jobs of each cell. */
  private activeJobs(workspaceId: string) {
    return this.em.execute<
      (BoardCell['activeJobs'][number] & { deploymentId: string; environmentId: string })[]
    >(
      `SELECT deployment_id AS "deploymentId", environment_id AS "environmentId", id, status, "releaseId", agent,
              resource FROM (
         SELECT j.deployment_id, j.environment_id, j.id, j.status, j.release_id AS "releaseId",
                CASE WHEN a.id IS NOT NULL THEN json_build_object('id', a.id, 'name', a.name) END AS agent,
                r.name AS resource,
                row_number() OVER (PARTITION BY j.deployment_id, j.environment_id ORDER BY j.created_at, j.id) AS rank
           FROM job j
           LEFT JOIN job_agent a ON a.id = j.job_agent_id
           JOIN resource r ON r.id = j.resource_id
          WHERE j.workspace_id = ? AND j.release_id IS NOT NULL AND j.completed_at IS NULL) x
        WHERE rank <= ${JOBS_PER_CELL}`,
      [workspaceId],
    );
  }
}
