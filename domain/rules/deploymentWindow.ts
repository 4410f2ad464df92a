import { RULE_DEFAULTS } from '../ruleDefaults';
import { windowState } from '../windows';
import { eachRuleOf, type TargetFacts, type RuleEvaluation } from './evaluator';

/**
 * Ctrlplane's `deploymentWindow`: an allow window passes only inside its windows, a deny window
 * only outside them; each waits until its edge.
 */

export const kind = 'deploymentWindow';

export function evaluate(facts: TargetFacts, now: Date): RuleEvaluation[] {
  return eachRuleOf(facts, kind, ({ spec }) => {
    const state = windowState({ ...spec, timezone: spec.timezone ?? RULE_DEFAULTS.timezone }, now);
    const at = state.changesAt?.toISOString();
    // A stored rule that cannot be evaluated holds releases back, allow and deny windows alike.
    if (state.problem)
      return { state: 'blocked', reason: `the window's rule cannot be evaluated: ${state.problem}` };
    if (spec.allowWindow ?? RULE_DEFAULTS.allowWindow) {
      if (state.inside) return { state: 'passed', reason: `inside an allow window until ${at}` };
      if (!at) return { state: 'blocked', reason: 'the allow window never opens again' };
      return {
        state: 'waiting',
        reason: state.searchedUntil
          ? `outside the allow window; none opens before ${at} (the rule is read again then)`
          : `outside the allow window; it opens at ${at}`,
        nextEvaluationAt: at,
      };
    }
    return state.inside
      ? { state: 'waiting', reason: `inside a deny window until ${at}`, nextEvaluationAt: at }
      : { state: 'passed', reason: 'outside deny windows' };
  });
}
