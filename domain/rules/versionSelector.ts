import { versionSelected } from '../eligibility';
import type { RuleEvaluation, TargetFacts } from './evaluator';

/**
 * Ctrlplane's `versionSelector` rules, judged together: the version passes when every one of them
 * admits it on the target (domain/eligibility.ts), and is blocked by the first that does not.
 */

export const kind = 'versionSelector';

export function evaluate(facts: TargetFacts): RuleEvaluation[] {
  const selected = versionSelected(
    facts.policies.flatMap((policy) => policy.rules),
    facts.version,
    facts,
  );
  return [
    selected.ok
      ? { kind, state: 'passed', reason: 'the version is selected' }
      : { kind, state: 'blocked', reason: `excluded by version selector ${selected.failing}` },
  ];
}
