import { eachRuleOf, instantIso, type TargetFacts, type RuleEvaluation } from './evaluator';

/** What a cooldown reads: the version deployed (or deploying) on the target. */
export interface DeployedVersionFacts {
  /** When the version deployed (or deploying) on the target was created. */
  deployedVersionCreatedAt: string | null;
  deployedVersionId: string | null;
}

/** Ctrlplane's `versionCooldown`: another version deploys only this long after the deployed one was created. */

export const kind = 'versionCooldown';

export function evaluate(facts: TargetFacts & DeployedVersionFacts, now: Date): RuleEvaluation[] {
  return eachRuleOf(facts, kind, ({ spec }) => {
    if (!facts.deployedVersionCreatedAt || facts.deployedVersionId === facts.version.id) {
      return { state: 'passed', reason: 'nothing deployed to cool down from' };
    }
    const until = Date.parse(facts.deployedVersionCreatedAt) + spec.intervalSeconds * 1000;
    return until > now.getTime()
      ? {
          state: 'waiting',
          reason: `cooling down until ${instantIso(until)}`,
          nextEvaluationAt: instantIso(until),
        }
      : { state: 'passed', reason: 'cooldown elapsed' };
  });
}
