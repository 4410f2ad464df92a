import type { EntityManager } from '@mikro-orm/postgresql';
import { summarizeCells, type CellCounts, type TargetGroup } from '../domain/boardCells';
import type { BoardCellJson, BoardJson, DeploymentPageJson, RecentReleaseJson } from '../domain/boardJson';
import { groupBy } from '../domain/grouping';
import { NotFoundError } from '../domain/errors';
import { ACTIVE_JOB_STATUS_LIST, uuidArray } from '../db/sql';

/**
 * One deployment × environment cell of the rollout board: its counts (domain/boardCells.ts; a target
 * runs the version of its current release, docs/behaviour.md "Release", and is headed for its newest
 * release's), why its releases wait and its jobs that have not ended. Its shape is the one the board's
 * JSON answers and its script reads (domain/boardJson.ts).
 */
export type BoardCell = BoardCellJson;

/** What the board shows: every filter is a list (any of its values), empty for all. */
export interface BoardFilter {
  /** System slugs: their deployments and environments. */
  systems: string[];
  /** Deployment slugs. */
  deployments: string[];
  /** Environment names. */
  environments: string[];
  /**
   * Text searched (case-insensitively) in deployment names and slugs and in environment names: the
   * rows narrow to the deployments it is found in, the columns to the environments it is found in,
   * each side only when it is found on that side.
   */
  search?: string;
}

export interface BoardDeployment {
  id: string;
  name: string;
  slug: string;
  /** Release targets in the board's environments. */
  targets: number;
  latestVersion: {
    id: string;
    tag: string;
    /** The fan-out's progress: `completed` means every target has its release, not that it runs. */
    rolloutStatus: string | null;
    releaseCount: number;
    /** Of the deployment's targets in the board's environments, those running this version. */
    onTargets: number;
  } | null;
}

export interface RolloutBoard {
  deployments: BoardDeployment[];
  environments: BoardJson['environments'];
  cells: BoardCell[];
  /** What the filters can name: every system, deployment and environment of the workspace. */
  choices: BoardJson['choices'];
}

/** One deployment's page: its versions, its targets by environment and state, its recent releases. */
export interface DeploymentBoard {
  deployment: DeploymentPageJson['deployment'] & { id: string };
  /** Release targets of the deployment. */
  targets: number;
  /** Newest first: each with its releases by phase and the targets running it. */
  versions: (DeploymentPageJson['versions'][number] & { id: string; rolloutStatus: string | null })[];
  /** The deployment's cells: per environment, its targets' versions and states. */
  environments: (Omit<BoardCell, 'deploymentId' | 'environmentId'> & { id: string; name: string })[];
  /** Newest first; a pending one lists the rules that hold it and can be skipped (a policy rule or a hold). */
  recentReleases: (RecentReleaseJson & { completedAt: string | null })[];
}

/** Active jobs shown per cell, at most. */
const JOBS_PER_CELL = 10;
/** Wait reasons shown per cell, at most. */
const REASONS_PER_CELL = 5;
/** Versions shown on a deployment's page, newest first. */
const VERSIONS_PER_DEPLOYMENT = 20;
/** Releases shown on a deployment's page, newest first. */
const RECENT_RELEASES = 50;

/**
 * Whether a deployment or environment is selected by the filters: its key among those named (or
 * none named) and linked to one of the systems named (or none named). Its parameters: `selectedParams`.
 */
const SELECTED = (key: string, links: string, linkColumn: string, id: string) => `
  (jsonb_array_length(?::jsonb) = 0 OR ${key} IN (SELECT jsonb_array_elements_text(?::jsonb)))
  AND (jsonb_array_length(?::jsonb) = 0 OR EXISTS (
         SELECT 1 FROM ${links} l JOIN system s ON s.id = l.system_id
          WHERE l.${linkColumn} = ${id} AND s.slug IN (SELECT jsonb_array_elements_text(?::jsonb))))`;
const selectedParams = (keys: string[], systems: string[]) =>
  [keys, keys, systems, systems].map((values) => JSON.stringify(values));

/** A board cell's key: its deployment and environment. */
const cellKey = (row: { deploymentId: string; environmentId: string }) =>
  `${row.deploymentId}/${row.environmentId}`;

/** The cells a query reads: these deployments × these environments. */
interface Scope {
  deploymentIds: string[];
  environmentIds: string[];
}

type Candidate<T> = T & { selected: boolean; found: boolean };

/**
 * The rows and columns the search leaves: each side narrows to where the text is found, and only
 * when it is found there; found on neither side, nothing is left.
 */
export function searchScope<D, E>(
  deployments: Candidate<D>[],
  environments: Candidate<E>[],
): { deployments: D[]; environments: E[] } {
  const d = deployments.filter((row) => row.selected);
  const e = environments.filter((row) => row.selected);
  const dFound = d.filter((row) => row.found);
  const eFound = e.filter((row) => row.found);
  const strip = <T>({ selected: _s, found: _f, ...row }: Candidate<T>) => row as unknown as T;
  if (dFound.length === 0 && eFound.length === 0) return { deployments: [], environments: [] };
  return {
    deployments: (dFound.length > 0 ? dFound : d).map(strip),
    environments: (eFound.length > 0 ? eFound : e).map(strip),
  };
}

/**
 * The rollout board of a workspace: its deployments × environments, each cell's targets with their
 * current and desired versions, states, waiting gates and active jobs; and a deployment's own page.
 * One query per kind of record (systems, deployments, environments, cells, waiting reasons, jobs),
 * whatever the number of targets.
 */
export class RolloutBoardStore {
  constructor(private readonly em: EntityManager) {}

  async board(workspaceId: string, filter: BoardFilter): Promise<RolloutBoard> {
    const search = filter.search ? filter.search.toLowerCase() : null;
    const systems = await this.em.execute<{ slug: string; name: string }[]>(
      `SELECT slug, name FROM system WHERE workspace_id = ? ORDER BY name, slug`,
      [workspaceId],
    );
    const allDeployments = await this.deploymentsWithLatestVersion(workspaceId, filter, search);
    const allEnvironments = await this.environmentCandidates(workspaceId, filter, search);
    const { deployments, environments } = searchScope(allDeployments, allEnvironments);
    const scope = {
      deploymentIds: deployments.map((d) => d.id),
      environmentIds: environments.map((e) => e.id),
    };
    const cells = scope.deploymentIds.length && scope.environmentIds.length ? await this.cells(scope) : [];
    const byDeployment = groupBy(cells, (cell) => cell.deploymentId);
    return {
      deployments: deployments.map(({ latestVersion, ...deployment }) => {
        const own = byDeployment.get(deployment.id) ?? [];
        const on = (tag: string) =>
          own.reduce((n, cell) => n + (cell.current.find((v) => v.tag === tag)?.targets ?? 0), 0);
        return {
          ...deployment,
          targets: own.reduce((n, cell) => n + cell.targets, 0),
          latestVersion: latestVersion && { ...latestVersion, onTargets: on(latestVersion.tag) },
        };
      }),
      environments,
      cells,
      choices: {
        systems,
        deployments: allDeployments.map(({ slug, name }) => ({ slug, name })),
        environments: allEnvironments.map(({ name }) => ({ name })),
      },
    };
  }

  /** A deployment's page, by its slug; 404 when the workspace has no such deployment. */
  async deployment(workspaceId: string, slug: string): Promise<DeploymentBoard> {
    const [deployment] = await this.em.execute<DeploymentBoard['deployment'][]>(
      `SELECT d.id, d.name, d.slug, d.description,
              coalesce((SELECT array_agg(s.name ORDER BY s.name) FROM system_deployment sd
                          JOIN system s ON s.id = sd.system_id WHERE sd.deployment_id = d.id), '{}') AS systems
         FROM deployment d WHERE d.workspace_id = ? AND d.slug = ?`,
      [workspaceId, slug],
    );
    if (!deployment) throw new NotFoundError('deployment', slug);
    const environments = await this.em.execute<{ id: string; name: string }[]>(
      `SELECT e.id, e.name FROM environment e
        WHERE e.id IN (SELECT environment_id FROM release_target WHERE deployment_id = ?) ORDER BY e.name, e.id`,
      [deployment.id],
    );
    const cells = environments.length
      ? await this.cells({ deploymentIds: [deployment.id], environmentIds: environments.map((e) => e.id) })
      : [];
    const byEnvironment = new Map(cells.map((cell) => [cell.environmentId, cell]));
    return {
      deployment,
      targets: cells.reduce((n, cell) => n + cell.targets, 0),
      // A version's targets: those whose current release is of it, counted in the cells.
      versions: (await this.versions(deployment.id)).map((version) => ({
        ...version,
        onTargets: cells.reduce(
          (n, cell) => n + (cell.current.find((v) => v.tag === version.tag)?.targets ?? 0),
          0,
        ),
      })),
      environments: environments.flatMap((environment) => {
        const cell = byEnvironment.get(environment.id);
        if (!cell) return [];
        const { deploymentId: _d, environmentId: _e, ...counts } = cell;
        return [{ ...environment, ...counts }];
      }),
      recentReleases: await this.recentReleases(deployment.id),
    };
  }

  /** The cells of a scope: their counts, waiting reasons and active jobs. */
  private async cells(scope: Scope): Promise<BoardCell[]> {
    const [cells, reasons, active] = await Promise.all([
      this.cellCounts(scope),
      this.waitingReasons(scope),
      this.activeJobs(scope),
    ]);
    const waiting = groupBy(reasons, cellKey);
    const jobs = groupBy(active, cellKey);
    return cells.map((cell) => ({
      ...cell,
      waiting: (waiting.get(cellKey(cell)) ?? []).map((row) => ({ reason: row.reason, releases: row.n })),
      activeJobs: (jobs.get(cellKey(cell)) ?? []).map(({ id, status, releaseId, agent, resource }) => ({
        id,
        status,
        releaseId,
        agent,
        resource,
      })),
    }));
  }

  /** Every deployment, each marked as selected by the filters and as found by the search. */
  private deploymentsWithLatestVersion(workspaceId: string, filter: BoardFilter, search: string | null) {
    return this.em.execute<
      Candidate<
        Omit<BoardDeployment, 'targets' | 'latestVersion'> & {
          latestVersion: Omit<NonNullable<BoardDeployment['latestVersion']>, 'onTargets'> | null;
        }
      >[]
    >(
      `SELECT d.id, d.name, d.slug,
              (SELECT json_build_object('id', v.id, 'tag', v.tag, 'rolloutStatus', v.rollout_status,
                                        'releaseCount', v.rollout_release_count)
                 FROM deployment_version v WHERE v.deployment_id = d.id AND v.status = 'ready'
                ORDER BY v.created_at DESC, v.id DESC LIMIT 1) AS "latestVersion",
              ${SELECTED('d.slug', 'system_deployment', 'deployment_id', 'd.id')} AS selected,
              (?::text IS NULL OR strpos(lower(d.name), ?) > 0 OR strpos(lower(d.slug), ?) > 0) AS found
         FROM deployment d WHERE d.workspace_id = ? ORDER BY d.name, d.id`,
      [...selectedParams(filter.deployments, filter.systems), search, search, search, workspaceId],
    );
  }

  /** Every environment, each marked as selected by the filters and as found by the search. */
  private environmentCandidates(workspaceId: string, filter: BoardFilter, search: string | null) {
    return this.em.execute<Candidate<{ id: string; name: string }>[]>(
      `SELECT e.id, e.name,
              ${SELECTED('e.name', 'system_environment', 'environment_id', 'e.id')} AS selected,
              (?::text IS NULL OR strpos(lower(e.name), ?) > 0) AS found
         FROM environment e WHERE e.workspace_id = ? ORDER BY e.name, e.id`,
      [...selectedParams(filter.environments, filter.systems), search, search, workspaceId],
    );
  }

  /**
   * Each cell's targets, grouped by current version, desired version and state: one row per target
   * (its state row keeps its newest release's version and phase and its current version: db/migrations
   * Migration0025NewestRelease), grouped here and summed into cells in domain/boardCells.ts.
   */
  private async cellCounts(scope: Scope): Promise<CellCounts[]> {
    const groups = await this.em.execute<TargetGroup[]>(
      `SELECT g.deployment_id AS "deploymentId", g.environment_id AS "environmentId", cv.tag AS "currentTag",
              nv.tag AS "desiredTag", g.state, g.targets
         FROM (SELECT t.deployment_id, t.environment_id, s.current_version_id, s.newest_version_id,
                      coalesce(s.newest_phase, 'none') AS state, count(*)::int AS targets
                 FROM release_target t
                 LEFT JOIN release_target_state s ON s.resource_id = t.resource_id
                      AND s.environment_id = t.environment_id AND s.deployment_id = t.deployment_id
                WHERE t.deployment_id = ANY(?::uuid[]) AND t.environment_id = ANY(?::uuid[])
                GROUP BY 1, 2, 3, 4, 5) g
         LEFT JOIN deployment_version nv ON nv.id = g.newest_version_id
         LEFT JOIN deployment_version cv ON cv.id = g.current_version_id`,
      [uuidArray(scope.deploymentIds), uuidArray(scope.environmentIds)],
    );
    return summarizeCells(groups);
  }

  /** The most common reasons each cell's pending releases wait for. */
  private waitingReasons(scope: Scope) {
    return this.em.execute<{ deploymentId: string; environmentId: string; reason: string; n: number }[]>(
      `SELECT deployment_id AS "deploymentId", environment_id AS "environmentId", reason, n FROM (
         SELECT deployment_id, environment_id, coalesce(phase_reason, 'not evaluated yet') AS reason, count(*)::int AS n,
                row_number() OVER (PARTITION BY deployment_id, environment_id ORDER BY count(*) DESC) AS rank
           FROM release WHERE deployment_id = ANY(?::uuid[]) AND environment_id = ANY(?::uuid[]) AND phase = 'pending'
          GROUP BY deployment_id, environment_id, coalesce(phase_reason, 'not evaluated yet')) w
        WHERE rank <= ${REASONS_PER_CELL}`,
      [uuidArray(scope.deploymentIds), uuidArray(scope.environmentIds)],
    );
  }

  /**
   * The oldest active jobs of each cell. An active job holds its target (docs/design.md "Invariants"),
   * so these are the jobs of the releases holding the cell's targets, read through the index of
   * active jobs.
   */
  private activeJobs(scope: Scope) {
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
          WHERE j.status IN ${ACTIVE_JOB_STATUS_LIST} AND j.release_id IS NOT NULL
            AND j.deployment_id = ANY(?::uuid[]) AND j.environment_id = ANY(?::uuid[])) x
        WHERE rank <= ${JOBS_PER_CELL}`,
      [uuidArray(scope.deploymentIds), uuidArray(scope.environmentIds)],
    );
  }

  /** A deployment's newest versions, each with its releases by phase. */
  private versions(deploymentId: string) {
    return this.em.execute<Omit<DeploymentBoard['versions'][number], 'onTargets'>[]>(
      `WITH v AS (
         SELECT id, tag, status, created_at, rollout_status FROM deployment_version WHERE deployment_id = ?
          ORDER BY created_at DESC, id DESC LIMIT ${VERSIONS_PER_DEPLOYMENT}),
       phases AS (
         SELECT version_id, json_object_agg(phase, n) AS releases FROM (
           SELECT r.version_id, r.phase, count(*)::int AS n FROM release r WHERE r.version_id IN (SELECT id FROM v)
            GROUP BY r.version_id, r.phase) p GROUP BY version_id)
       SELECT v.id, v.tag, v.status, v.created_at AS "createdAt", v.rollout_status AS "rolloutStatus",
              coalesce(phases.releases, '{}') AS releases
         FROM v LEFT JOIN phases ON phases.version_id = v.id
        ORDER BY v.created_at DESC, v.id DESC`,
      [deploymentId],
    );
  }

  /** A deployment's newest releases. */
  private recentReleases(deploymentId: string) {
    return this.em.execute<DeploymentBoard['recentReleases']>(
      `SELECT r.id, v.tag, r.version_id AS "versionId", r.environment_id AS "environmentId",
              CASE WHEN r.phase = 'pending' THEN
                (SELECT coalesce(json_agg(json_build_object('ruleId', rule->>'ruleId', 'kind', rule->>'kind',
                                                            'reason', rule->>'reason')), '[]')
                   FROM jsonb_array_elements(r.evaluation->'rules') rule
                  WHERE rule->>'state' <> 'passed' AND rule->>'ruleId' IS NOT NULL)
              ELSE '[]' END AS "holdingRules",
              e.name AS environment, res.name AS resource, r.phase, r.phase_reason AS "phaseReason",
              r.created_at AS "createdAt", r.completed_at AS "completedAt"
         FROM deployment_version v
         JOIN release r ON r.version_id = v.id
         JOIN environment e ON e.id = r.environment_id
         JOIN resource res ON res.id = r.resource_id
        WHERE v.deployment_id = ?
        ORDER BY r.created_at DESC, r.id DESC LIMIT ${RECENT_RELEASES}`,
      [deploymentId],
    );
  }
}
