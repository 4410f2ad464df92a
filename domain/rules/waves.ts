import type { RolloutMembership } from '../rollouts';
import { eachRuleOf, type TargetFacts, type RuleEvaluation } from './evaluator';

/** What a waves rule reads: the release's place in its version's rollout, by rule id. */
export interface WaveFacts {
  /** Read only when a waves rule applies. A release with no place (a pin's) is no part of a rollout. */
  waves?: Record<string, RolloutMembership>;
}

/**
 * A rollout in waves (docs/behaviour.md "Rolling out to a fleet"): a release waits until its
 * rollout admits its target; the rollout's workflow admits them wave by wave. An aborted rollout
 * blocks the targets it had not admitted.
 */

export const kind = 'waves';

export function evaluate(facts: TargetFacts & WaveFacts, _now: Date): RuleEvaluation[] {
  return eachRuleOf(facts, kind, ({ id }) => {
    const place = facts.waves?.[id];
    if (!place)
      return { state: 'passed', reason: 'not part of a rollout in waves (a pin or an earlier version)' };
    const wave = `wave ${place.waveName} (${place.wave + 1} of ${place.waveCount})`;
    if (place.admitted) return { state: 'passed', reason: `admitted in ${wave}` };
    if (place.state === 'aborted') return { state: 'blocked', reason: `${wave}: the rollout was aborted` };
    return { state: 'waiting', reason: `${wave} waits: ${place.reason}` };
  });
}
