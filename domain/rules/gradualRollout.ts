import { eachRuleOf, instantIso, type TargetFacts, type RuleEvaluation } from './evaluator';

/** What a gradual rollout reads: the target's place in the version's rollout to its environment. */
export interface RolloutFacts {
  /** Read only when a gradual rollout applies; otherwise the first of one, started with the release. */
  rollout: { position: number; total: number; startedAt: string };
}

/** Ctrlplane's `gradualRollout`: each target's release waits for its turn, spaced from the rollout's start. */

export const kind = 'gradualRollout';

export function evaluate(facts: TargetFacts & RolloutFacts, now: Date): RuleEvaluation[] {
  return eachRuleOf(facts, kind, ({ spec }) => {
    const { position, total, startedAt } = facts.rollout;
    const spacingMs =
      spec.rolloutType === 'linear'
        ? spec.timeScaleInterval * 1000
        : (spec.timeScaleInterval * 1000) / Math.max(total, 1);
    const at = Date.parse(startedAt) + position * spacingMs;
    return at > now.getTime()
      ? {
          state: 'waiting',
          reason: `target ${position + 1} of ${total} is scheduled for ${instantIso(at)}`,
          nextEvaluationAt: instantIso(at),
        }
      : { state: 'passed', reason: `target ${position + 1} of ${total} is due` };
  });
}
