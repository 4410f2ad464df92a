import type { PlanVerdict } from '../planValidation';
import { eachRuleOf, instantIso, type TargetFacts, type RuleEvaluation } from './evaluator';

/**
 * What a plan validation rule reads: each `planValidationOpa` rule's verdict on the release's plan,
 * by rule id. Evaluated by the release's workflow when it loads its facts, read as recorded by an
 * explanation (absent in a fan-out's batch, which then leaves the release to its workflow, and for
 * a rule not yet evaluated on the plan).
 */
export interface PlanVerdictFacts {
  planValidation?: Record<string, PlanVerdict>;
}

/** An OPA engine that failed (not installed, timed out) is tried again this much later. */
const PLAN_VALIDATION_RETRY_MS = 60_000;
/** Deny messages quoted in a reason, at most. */
const QUOTED_DENIALS = 5;

/**
 * Ctrlplane's `planValidationOpa` (domain/planValidation.ts): passes on a verdict without denials,
 * is blocked by denials, waits for a verdict, and for a retry of an engine that failed.
 */

export const kind = 'planValidationOpa';

export function evaluate(facts: TargetFacts & PlanVerdictFacts, now: Date): RuleEvaluation[] {
  return eachRuleOf(facts, kind, ({ id, spec }) => {
    const verdict = facts.planValidation?.[id];
    if (!verdict)
      return {
        state: 'waiting',
        reason: `plan validation ${spec.name} is pending: no verdict on this plan yet`,
      };
    if ('error' in verdict) {
      return {
        state: 'waiting',
        reason: `plan validation ${spec.name} could not run: ${verdict.error}`,
        nextEvaluationAt: instantIso(now.getTime() + PLAN_VALIDATION_RETRY_MS),
      };
    }
    if (verdict.denials.length === 0)
      return { state: 'passed', reason: `plan validation ${spec.name} passed` };
    const quoted = verdict.denials.slice(0, QUOTED_DENIALS).join('; ');
    const more =
      verdict.denials.length > QUOTED_DENIALS ? ` (and ${verdict.denials.length - QUOTED_DENIALS} more)` : '';
    return { state: 'blocked', reason: `plan validation ${spec.name} denies: ${quoted}${more}` };
  });
}
