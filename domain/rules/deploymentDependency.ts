import { selectorContext, selectorMatches, type DeploymentFields } from '../selectors';
import { eachRuleOf, type TargetFacts, type VersionFacts, type RuleEvaluation } from './evaluator';

/**
 * What a deployment dependency rule reads: the other deployments' current versions on the target's
 * resource, read only when such a rule applies (absent otherwise, and in older histories).
 */
export interface UpstreamFacts {
  upstream?: { deployment: DeploymentFields; version: VersionFacts }[];
}

/** Ctrlplane's `deploymentDependency`: waits until another deployment's current version here matches. */

export const kind = 'deploymentDependency';

export function evaluate(facts: TargetFacts & UpstreamFacts): RuleEvaluation[] {
  return eachRuleOf(facts, kind, ({ spec }) => {
    const match = (facts.upstream ?? []).find(({ deployment, version }) =>
      selectorMatches('dependency', spec.dependsOn, {
        deployment: selectorContext.deployment(deployment),
        version: selectorContext.version(version),
      }),
    );
    return match
      ? { state: 'passed', reason: `${match.deployment.name} runs ${match.version.tag} here` }
      : { state: 'waiting', reason: `no deployment runs a version here that matches ${spec.dependsOn}` };
  });
}
