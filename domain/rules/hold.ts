import { holdAttribution, holdState, type HoldFact } from '../holds';
import type { RuleEvaluation, TargetFacts } from './evaluator';

/**
 * The holds whose selector matches the target (a pin only on its version's deployment), unexpired
 * when read, oldest first; absent when there are none, and in older histories.
 */
export interface HoldFacts {
  holds?: HoldFact[];
}

/**
 * Each hold on the target (docs/behaviour.md "Holds and freezes"), as a rule whose id is the hold's
 * (so a policy skip of it is a break-glass): a block in force waits until it ends; a pin in force
 * passes its own version and holds every other one back.
 */

export const kind = 'hold';

export function evaluate(facts: Pick<TargetFacts, 'version'> & HoldFacts, now: Date): RuleEvaluation[] {
  return (facts.holds ?? []).map((hold): RuleEvaluation => {
    const base: Pick<RuleEvaluation, 'kind' | 'ruleId'> = { kind, ruleId: hold.id };
    const state = holdState(hold, now);
    const next = state.changesAt ? { nextEvaluationAt: state.changesAt.toISOString() } : {};
    if (!state.inForce) {
      return {
        ...base,
        state: 'passed',
        reason: state.changesAt
          ? `outside the freeze of ${hold.createdBy.name} until ${state.changesAt.toISOString()}: ${hold.reason}`
          : `the hold of ${hold.createdBy.name} has ended`,
      };
    }
    const attribution = holdAttribution(hold, state);
    if (hold.effect === 'block') return { ...base, state: 'waiting', reason: `held ${attribution}`, ...next };
    return hold.version!.id === facts.version.id
      ? { ...base, state: 'passed', reason: `pinned here to ${hold.version!.tag} ${attribution}` }
      : { ...base, state: 'waiting', reason: `pinned to ${hold.version!.tag} ${attribution}`, ...next };
  });
}
