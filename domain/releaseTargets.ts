import {
  selectorContext,
  selectorMatches,
  type DeploymentFields,
  type EnvironmentFields,
  type ResourceFields,
} from './selectors';

/**
 * Release targets (docs/behaviour.md "What the service does"): deployment × environment × resource. A resource
 * takes part when
 *  - the deployment and the environment share a system,
 *  - the environment's selector includes it (an environment without a selector includes nothing),
 *  - the deployment's selector matches it (a deployment without one takes any resource of its
 *    environments).
 */

export interface TargetResource extends ResourceFields {
  id: string;
}

export interface TargetEnvironment extends EnvironmentFields {
  resourceSelector: string | null;
}

export interface TargetDeployment extends DeploymentFields {
  resourceSelector: string | null;
}

export interface SystemLink {
  systemId: string;
  /** Exactly one of the two. */
  deploymentId?: string;
  environmentId?: string;
}

export interface ReleaseTargetRef {
  resourceId: string;
  environmentId: string;
  deploymentId: string;
}

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const KEY = new RegExp(`^(${UUID})-(${UUID})-(${UUID})$`, 'i');

/** `{resourceId}-{environmentId}-{deploymentId}`, the key the API uses for a target. */
export function releaseTargetKey(target: ReleaseTargetRef): string {
  return `${target.resourceId}-${target.environmentId}-${target.deploymentId}`;
}

export function parseReleaseTargetKey(key: string): ReleaseTargetRef | undefined {
  const match = KEY.exec(key);
  return match
    ? {
        resourceId: match[1]!.toLowerCase(),
        environmentId: match[2]!.toLowerCase(),
        deploymentId: match[3]!.toLowerCase(),
      }
    : undefined;
}

export interface TargetInput {
  resources: readonly TargetResource[];
  environments: readonly TargetEnvironment[];
  deployments: readonly TargetDeployment[];
  links: readonly SystemLink[];
  /** Compute only targets of these deployments / environments (resources are limited by `resources`). */
  onlyDeployments?: ReadonlySet<string>;
  onlyEnvironments?: ReadonlySet<string>;
}

/** Every target among the given records; each environment and deployment selector runs once per resource. */
export function computeReleaseTargets(input: TargetInput): ReleaseTargetRef[] {
  return input.resources.flatMap(releaseTargetMatcher(input));
}

/**
 * The targets of one resource at a time, among the given environments and deployments: for callers
 * that pace a long list of resources (engine/targets/releaseTargetSync.ts).
 */
export function releaseTargetMatcher(
  input: Omit<TargetInput, 'resources'>,
): (resource: TargetResource) => ReleaseTargetRef[] {
  const systemsOf = (pick: (link: SystemLink) => string | undefined) => {
    const map = new Map<string, Set<string>>();
    for (const link of input.links) {
      const id = pick(link);
      if (!id) continue;
      if (!map.has(id)) map.set(id, new Set());
      map.get(id)!.add(link.systemId);
    }
    return map;
  };
  const deploymentSystems = systemsOf((link) => link.deploymentId);
  const environmentSystems = systemsOf((link) => link.environmentId);

  const environments = input.environments.filter(
    (env) =>
      env.resourceSelector &&
      environmentSystems.has(env.id) &&
      (!input.onlyEnvironments || input.onlyEnvironments.has(env.id)),
  );
  const deployments = input.deployments.filter(
    (dep) => deploymentSystems.has(dep.id) && (!input.onlyDeployments || input.onlyDeployments.has(dep.id)),
  );
  // Pairs that share a system, computed once.
  const pairs = new Map<string, TargetDeployment[]>();
  for (const env of environments) {
    const systems = environmentSystems.get(env.id)!;
    pairs.set(
      env.id,
      deployments.filter((dep) => [...deploymentSystems.get(dep.id)!].some((system) => systems.has(system))),
    );
  }

  return (resource) => {
    const targets: ReleaseTargetRef[] = [];
    const context = { resource: selectorContext.resource(resource) };
    const deploymentMatch = new Map<string, boolean>();
    for (const env of environments) {
      const candidates = pairs.get(env.id)!;
      if (candidates.length === 0 || !selectorMatches('resource', env.resourceSelector!, context)) continue;
      for (const dep of candidates) {
        let matches = deploymentMatch.get(dep.id);
        if (matches === undefined) {
          matches =
            dep.resourceSelector === null || selectorMatches('resource', dep.resourceSelector, context);
          deploymentMatch.set(dep.id, matches);
        }
        if (matches) targets.push({ resourceId: resource.id, environmentId: env.id, deploymentId: dep.id });
      }
    }
    return targets;
  };
}
