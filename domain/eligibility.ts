import type { PolicyRule } from './policies';
import {
  selectorContext,
  selectorMatches,
  type DeploymentFields,
  type EnvironmentFields,
  type ResourceFields,
  type VersionFields,
} from './selectors';

/**
 * Which version may go to a release target: the one rule the fan-out (which versions get a release
 * at all) and the gates (which release is superseded, which is blocked) share.
 */

/** What orders versions: creation time, then id (ids are time-ordered UUIDv7, so ties are rare). */
export interface VersionOrder {
  id: string;
  createdAt: string;
}

export function isNewerVersion(a: VersionOrder, b: VersionOrder): boolean {
  const byTime = Date.parse(a.createdAt) - Date.parse(b.createdAt);
  return byTime > 0 || (byTime === 0 && a.id > b.id);
}

/** The records a version selector sees besides the version. */
export interface TargetFields {
  resource: ResourceFields;
  deployment: DeploymentFields;
  environment: EnvironmentFields;
}

/**
 * Whether every `versionSelector` rule among `rules` admits the version on the target; when one
 * does not, its description (or its expression) says which.
 */
export function versionSelected(
  rules: readonly PolicyRule[],
  version: VersionFields,
  target: TargetFields,
): { ok: true } | { ok: false; failing: string } {
  for (const rule of rules) {
    const spec = rule.versionSelector;
    if (!spec) continue;
    const admitted = selectorMatches('versionRule', spec.selector, {
      version: selectorContext.version(version),
      resource: target.resource,
      deployment: target.deployment,
      environment: target.environment,
    });
    if (!admitted) return { ok: false, failing: spec.description ?? spec.selector };
  }
  return { ok: true };
}

/**
 * Whether a version can ever deploy on a target: its version selectors admit it, and the version
 * running or deploying there (if any) is not newer. A version that cannot gets no release there.
 */
export function canEverDeploy(
  version: VersionFields & VersionOrder,
  target: TargetFields & { deployed: VersionOrder | null; rules: readonly PolicyRule[] },
): boolean {
  if (target.deployed && target.deployed.id !== version.id && isNewerVersion(target.deployed, version)) {
    return false;
  }
  return versionSelected(target.rules, version, target).ok;
}
