import type { EntityManager } from '@mikro-orm/postgresql';
import type { PolicyRule } from '../../domain/policies';
import {
  selectorContext,
  selectorMatches,
  type DeploymentFields,
  type EnvironmentFields,
  type ResourceFields,
} from '../../domain/selectors';

export interface MatchedPolicy {
  id: string;
  name: string;
  priority: number;
  rules: PolicyRule[];
}

export interface TargetRecords {
  resource: ResourceFields;
  deployment: DeploymentFields;
  environment: EnvironmentFields;
}

/** SQL for a target's records as selectors read them, from rows `d` (deployment), `e` (environment) and `r` (resource). */
export const TARGET_RECORD_COLUMNS = `
            json_build_object('id', d.id, 'name', d.name, 'slug', d.slug, 'metadata', d.metadata) AS deployment,
            json_build_object('id', e.id, 'name', e.name, 'metadata', e.metadata) AS environment,
            json_build_object('kind', r.kind, 'version', r.version, 'name', r.name, 'identifier', r.identifier,
                              'metadata', r.metadata, 'config', r.config) AS resource`;

/** SQL joining the records `TARGET_RECORD_COLUMNS` reads to row `row` that names a target's three ids. */
export const TARGET_RECORD_JOINS = (row: string) => `
       JOIN deployment d ON d.id = ${row}.deployment_id
       JOIN environment e ON e.id = ${row}.environment_id
       JOIN resource r ON r.id = ${row}.resource_id`;

/** A target's records as a `target` selector's context. */
export function targetContext(target: TargetRecords) {
  return {
    resource: selectorContext.resource(target.resource),
    deployment: selectorContext.deployment(target.deployment),
    environment: selectorContext.environment(target.environment),
  };
}

/** The workspace's enabled policies, to be matched against targets. */
export function enabledPolicies(
  em: Pick<EntityManager, 'execute'>,
  workspaceId: string,
): Promise<(MatchedPolicy & { selector: string })[]> {
  return em.execute(
    `SELECT id, name, priority, rules, selector FROM policy WHERE workspace_id = ? AND enabled ORDER BY priority DESC, id`,
    [workspaceId],
  );
}

/** The policies whose selector matches a release target, highest priority first. */
export function policiesForTarget(
  policies: readonly (MatchedPolicy & { selector: string })[],
  target: TargetRecords,
) {
  const context = targetContext(target);
  return policies
    .filter((policy) => selectorMatches('target', policy.selector, context))
    .map(({ id, name, priority, rules }) => ({ id, name, priority, rules }));
}

/**
 * The policies that apply to each row's target, by row id: its workspace's enabled ones (read once
 * per workspace), or `policies` instead (a dry run's).
 */
export async function policiesOfTargets(
  sql: Pick<EntityManager, 'execute'>,
  rows: readonly (TargetRecords & { id: string; workspace_id: string })[],
  policies?: (MatchedPolicy & { selector: string })[],
): Promise<Map<string, MatchedPolicy[]>> {
  const workspacePolicies = new Map<string, (MatchedPolicy & { selector: string })[]>();
  for (const workspaceId of new Set(rows.map((row) => row.workspace_id))) {
    workspacePolicies.set(workspaceId, policies ?? (await enabledPolicies(sql, workspaceId)));
  }
  return new Map(
    rows.map((row) => [row.id, policiesForTarget(workspacePolicies.get(row.workspace_id)!, row)]),
  );
}
