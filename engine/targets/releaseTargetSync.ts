import type { EntityManager } from '@mikro-orm/postgresql';
import {
  computeReleaseTargets,
  releaseTargetKey,
  releaseTargetMatcher,
  type ReleaseTargetRef,
  type SystemLink,
  type TargetDeployment,
  type TargetEnvironment,
  type TargetResource,
} from '../../domain/releaseTargets';
import { enqueueTargetsAdded } from '../../db/outbox';
import { paced } from '../selectors/pace';
import { OPEN_RELEASES_OF, wakeReleases } from '../../db/releaseWake';
import { targetRows, targetRowsSql, uuidArray } from '../../db/sql';
import { preparedStatement, runPrepared, type PreparedStatement } from '../../db/preparedStatements';

/**
 * Keeps the stored release targets exact. Every write that can change them (resources,
 * selectors, system links, deletes) calls `syncReleaseTargets` in its own transaction, scoped to
 * what it touched: one resource upsert evaluates the selectors against that resource only.
 *
 * Writes of one workspace take a transaction-level advisory lock first; different workspaces do
 * not wait. Writes of resources take it shared: they compute the targets of the resources they
 * touched only, against environments, deployments and links that cannot change while they hold it,
 * and two of them that touch one resource take turns on its row (engine/targets/resourceRows.ts), so many run
 * at once without computing from each other's stale view. Writes that recompute across resources
 * (selectors, system links, deletes of environments and deployments) take it exclusive. A version
 * becoming ready takes it exclusive too (`markVersionReady`), so a new target either sees the
 * ready version (and is flagged for a rollout) or was committed before that version's rollout
 * reads it.
 */

export interface ReleaseTargetChanges {
  added: ReleaseTargetRef[];
  removed: ReleaseTargetRef[];
}

export type TargetScope =
  /**
   * Resources as they now are (after an upsert, without reading them back), and those just deleted
   * (`goneIds`), which lose their targets.
   */
  | { resources: TargetResource[]; goneIds?: string[] }
  /** Resources read from the database; deleted ones lose their targets. */
  | { resourceIds: string[] }
  | { deploymentIds: string[] }
  | { environmentIds: string[] }
  | { all: true };

const TARGET_LOCKS = {
  exclusive: preparedStatement(
    'lock_workspace_targets',
    'SELECT pg_advisory_xact_lock(hashtextextended($1, 7311))',
  ),
  shared: preparedStatement(
    'lock_workspace_targets_shared',
    'SELECT pg_advisory_xact_lock_shared(hashtextextended($1, 7311))',
  ),
};

export async function lockWorkspaceTargets(
  em: EntityManager,
  workspaceId: string,
  mode: 'exclusive' | 'shared' = 'exclusive',
): Promise<void> {
  await runPrepared(em, TARGET_LOCKS[mode], [workspaceId]);
}

/**
 * Removes targets ($1) and adds targets of the workspace $2 ($3), each a `targetRows` set (db/sql.ts:
 * as uuid arrays each PUT planned it again, 0.35 ms), flagging each added one whose deployment has
 * a ready version; answers how many were flagged and the open releases of the removed ones.
 */
const APPLY_TARGET_CHANGES = preparedStatement(
  'apply_release_target_changes',
  `WITH gone AS (
     DELETE FROM release_target t
      USING ${targetRowsSql('$1', 'g')}
      WHERE t.resource_id = g.resource_id AND t.environment_id = g.environment_id AND t.deployment_id = g.deployment_id
      RETURNING t.resource_id, t.environment_id, t.deployment_id
   ), inserted AS (
     INSERT INTO release_target (resource_id, environment_id, deployment_id, workspace_id, rollout_pending)
     SELECT a.resource_id, a.environment_id, a.deployment_id, $2::uuid,
            EXISTS (SELECT 1 FROM deployment_version v WHERE v.deployment_id = a.deployment_id AND v.status = 'ready')
       FROM ${targetRowsSql('$3', 'a')}
     ON CONFLICT DO NOTHING
     RETURNING rollout_pending
   )
   SELECT (SELECT count(*) FILTER (WHERE rollout_pending)::int FROM inserted) AS pending,
          (SELECT coalesce(array_agg(r.id), '{}') FROM gone g CROSS JOIN LATERAL (${OPEN_RELEASES_OF('g')}) r) AS woken`,
);

/**
 * The one function through which release targets appear and disappear, and where orchestration
 * hooks in: a new target of a deployment with a ready version is flagged for the workspace's
 * target rollout, which gives it a release of the newest eligible version (one waiting
 * `targets.added` message however many writes and targets, db/outbox.ts `enqueueTargetsAdded`; a
 * deployment without a ready version needs none, its first ready version's rollout covers it). The
 * open releases of removed targets are woken, and withdraw.
 */
export async function applyReleaseTargetChanges(
  em: EntityManager,
  workspaceId: string,
  changes: ReleaseTargetChanges,
): Promise<void> {
  if (changes.removed.length === 0 && changes.added.length === 0) return;
  // One statement for both directions, and the open releases of the removed targets: a resource
  // that moves loses and gains targets, and wakes what it left, in one round trip.
  const [row] = await runPrepared<{ pending: number; woken: string[] }>(em, APPLY_TARGET_CHANGES, [
    targetRows(changes.removed),
    workspaceId,
    targetRows(changes.added),
  ]);
  if ((row?.pending ?? 0) > 0) await enqueueTargetsAdded(em, workspaceId);
  await wakeReleases(em, row?.woken ?? []);
}

interface State {
  environments: TargetEnvironment[];
  deployments: TargetDeployment[];
  links: SystemLink[];
  existing: ReleaseTargetRef[];
}

/**
 * Environments, deployments, system links of the workspace $1 and the stored targets `targets`
 * selects, in one round trip.
 */
const stateStatement = (name: string, targets: string) =>
  preparedStatement(
    name,
    `SELECT json_build_object(
       'environments', (SELECT coalesce(json_agg(json_build_object('id', id, 'name', name, 'metadata', metadata,
                          'resourceSelector', resource_selector)), '[]') FROM environment WHERE workspace_id = $1),
       'deployments', (SELECT coalesce(json_agg(json_build_object('id', id, 'name', name, 'slug', slug, 'metadata', metadata,
                          'resourceSelector', resource_selector)), '[]') FROM deployment WHERE workspace_id = $1),
       'links', (SELECT coalesce(json_agg(link), '[]') FROM (
                   SELECT json_build_object('systemId', system_id, 'deploymentId', deployment_id) AS link
                     FROM system_deployment WHERE workspace_id = $1
                   UNION ALL
                   SELECT json_build_object('systemId', system_id, 'environmentId', environment_id)
                     FROM system_environment WHERE workspace_id = $1) AS links),
       'existing', (SELECT coalesce(json_agg(json_build_object('resourceId', resource_id, 'environmentId', environment_id,
                      'deploymentId', deployment_id)), '[]') FROM release_target WHERE ${targets})
     ) AS state`,
  );

/**
 * A scoped read finds the stored targets by its keys ($2); the workspace is checked on what they
 * find, never used to look them up (`IS TRUE` keeps it off the workspace's index): as an index
 * condition beside the keys, stale statistics planned a scan of the workspace's every target (a
 * BitmapAnd: 1.35 ms of a PUT's 1.4 ms read of its state with 11,000 targets in the workspace,
 * where the key alone is an index probe).
 */
const byKey = (column: string) => `${column} = ANY($2::uuid[]) AND (workspace_id = $1) IS TRUE`;

const STATE_OF = {
  resources: stateStatement('target_state_of_resources', byKey('resource_id')),
  deployments: stateStatement('target_state_of_deployments', byKey('deployment_id')),
  environments: stateStatement('target_state_of_environments', byKey('environment_id')),
  all: stateStatement('target_state_of_workspace', 'workspace_id = $1'),
};

/** Which statement reads a scope's state, and the keys it looks its stored targets up by. */
function stateRead(scope: TargetScope): { statement: PreparedStatement; keys?: string[] } {
  if ('resources' in scope)
    return {
      statement: STATE_OF.resources,
      keys: [...scope.resources.map((r) => r.id), ...(scope.goneIds ?? [])],
    };
  if ('resourceIds' in scope) return { statement: STATE_OF.resources, keys: scope.resourceIds };
  if ('deploymentIds' in scope) return { statement: STATE_OF.deployments, keys: scope.deploymentIds };
  if ('environmentIds' in scope) return { statement: STATE_OF.environments, keys: scope.environmentIds };
  return { statement: STATE_OF.all };
}

async function loadState(em: EntityManager, workspaceId: string, scope: TargetScope): Promise<State> {
  const { statement, keys } = stateRead(scope);
  const [row] = await runPrepared<{ state: State }>(
    em,
    statement,
    keys ? [workspaceId, uuidArray(keys)] : [workspaceId],
  );
  return row!.state;
}

const RESOURCE_COLUMNS = 'id, kind, version, name, identifier, metadata, config';

function loadResources(em: EntityManager, workspaceId: string, ids?: string[]): Promise<TargetResource[]> {
  return ids
    ? em.execute<TargetResource[]>(
        `SELECT ${RESOURCE_COLUMNS} FROM resource WHERE workspace_id = ? AND id = ANY(?::uuid[]) AND deleted_at IS NULL`,
        [workspaceId, uuidArray(ids)],
      )
    : em.execute<TargetResource[]>(
        `SELECT ${RESOURCE_COLUMNS} FROM resource WHERE workspace_id = ? AND deleted_at IS NULL`,
        [workspaceId],
      );
}

/**
 * Recomputes the targets within `scope` and stores the difference. Call inside a transaction,
 * after `lockWorkspaceTargets` and after flushing the write that prompted it.
 */
export async function syncReleaseTargets(
  em: EntityManager,
  workspaceId: string,
  scope: TargetScope,
): Promise<ReleaseTargetChanges> {
  const state = await loadState(em, workspaceId, scope);
  const onlyDeployments = 'deploymentIds' in scope ? new Set(scope.deploymentIds) : undefined;
  const onlyEnvironments = 'environmentIds' in scope ? new Set(scope.environmentIds) : undefined;
  const linked = (id: string, field: 'deploymentId' | 'environmentId') =>
    state.links.some((l) => l[field] === id);
  // A deployment or environment in no system has no targets: no need to read every resource.
  const needsResources =
    (!onlyDeployments || [...onlyDeployments].some((id) => linked(id, 'deploymentId'))) &&
    (!onlyEnvironments || [...onlyEnvironments].some((id) => linked(id, 'environmentId')));
  const resources =
    'resources' in scope
      ? scope.resources
      : needsResources
        ? await loadResources(em, workspaceId, 'resourceIds' in scope ? scope.resourceIds : undefined)
        : [];
  // Selectors run one resource at a time, letting other requests in between (engine/selectors/pace.ts).
  const targetsOf = releaseTargetMatcher({ ...state, onlyDeployments, onlyEnvironments });
  const desired = await paced(workspaceId, async (pacer) => {
    const found: ReleaseTargetRef[] = [];
    for (const resource of resources) {
      await pacer.pace();
      found.push(...targetsOf(resource));
    }
    return found;
  });
  const changes = difference(state.existing, desired);
  await applyReleaseTargetChanges(em, workspaceId, changes);
  return changes;
}

/** Stands in for a resource that is not stored: no stored target names it. */
const UNSTORED_RESOURCE = '00000000-0000-0000-0000-000000000000';

/**
 * The targets a resource with these fields would get, computed as a write computes them, each with
 * the first system its deployment and environment share; nothing is read of the resource or written.
 */
export async function previewReleaseTargets(
  em: EntityManager,
  workspaceId: string,
  fields: Omit<TargetResource, 'id'>,
): Promise<(ReleaseTargetRef & { systemId: string })[]> {
  const resource = { ...fields, id: UNSTORED_RESOURCE };
  const state = await loadState(em, workspaceId, { resources: [resource] });
  const systemsOf = (field: 'deploymentId' | 'environmentId', id: string) =>
    state.links.filter((link) => link[field] === id).map((link) => link.systemId);
  return computeReleaseTargets({ ...state, resources: [resource] }).map((target) => {
    const environmentSystems = new Set(systemsOf('environmentId', target.environmentId));
    const systemId = systemsOf('deploymentId', target.deploymentId)
      .filter((id) => environmentSystems.has(id))
      .sort()[0]!;
    return { ...target, systemId };
  });
}

export function difference(existing: ReleaseTargetRef[], desired: ReleaseTargetRef[]): ReleaseTargetChanges {
  const had = new Set(existing.map(releaseTargetKey));
  const want = new Set(desired.map(releaseTargetKey));
  return {
    added: desired.filter((target) => !had.has(releaseTargetKey(target))),
    removed: existing.filter((target) => !want.has(releaseTargetKey(target))),
  };
}

/** Before a deployment, environment or system link disappears: its targets leave through the one path. */
export async function removeReleaseTargets(
  em: EntityManager,
  workspaceId: string,
  scope: { deploymentIds: string[] } | { environmentIds: string[] },
): Promise<ReleaseTargetChanges> {
  const changes = { added: [], removed: (await loadState(em, workspaceId, scope)).existing };
  await applyReleaseTargetChanges(em, workspaceId, changes);
  return changes;
}
