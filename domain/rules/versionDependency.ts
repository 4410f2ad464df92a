import { selectorContext, selectorMatches } from '../selectors';
import type { RuleEvaluation, VersionFacts } from './evaluator';

/** A version's dependency on another deployment, with that deployment's current version on the resource. */
export interface DependencyFact {
  deploymentId: string;
  deploymentName: string;
  versionSelector: string;
  currentVersion: VersionFacts | null;
}

/** The version's dependencies (absent in histories recorded before dependencies existed). */
export interface DependencyFacts {
  versionDependencies?: DependencyFact[];
}

/**
 * The version's dependencies, declared on the version rather than by a policy: each waits until
 * the dependency's current version on this resource matches its selector (a release of that
 * deployment succeeding here wakes it).
 */

export const kind = 'versionDependency';

export function evaluate(facts: DependencyFacts): RuleEvaluation[] {
  return (facts.versionDependencies ?? []).map((dependency) => {
    const current = dependency.currentVersion;
    if (
      current &&
      selectorMatches('version', dependency.versionSelector, { version: selectorContext.version(current) })
    ) {
      return { kind, state: 'passed', reason: `${dependency.deploymentName} runs ${current.tag}` };
    }
    return {
      kind,
      state: 'waiting',
      reason: current
        ? `${dependency.deploymentName} runs ${current.tag} here, which does not match ${dependency.versionSelector}`
        : `${dependency.deploymentName} has no version deployed here yet`,
      waitingOn: { deploymentId: dependency.deploymentId },
    };
  });
}
