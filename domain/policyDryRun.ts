import { versionSelected } from './eligibility';
import { policyRuleEvaluations, type ReleaseFacts } from './gates';
import type { RuleEvaluation, RuleState } from './rules/evaluator';
import type { PolicyRule } from './policies';
import { ruleKind } from './ruleKinds';

/**
 * A policy tried before it is saved: each of its rules evaluated, by the gates' own code, on a
 * would-be release of each matching target's newest ready version; the targets it would hold now,
 * grouped by rule. Rules that act after dispatch (retry, verification) block nothing; a plan
 * validation rule needs each release's plan and is evaluated when releases run.
 */

export interface DryRunTarget {
  releaseTargetKey: string;
  resource: { name: string; identifier: string };
  environment: { id: string; name: string };
  deployment: { id: string; slug: string };
  version: { id: string; tag: string };
}

export interface DryRunRule {
  index: number;
  kind: string;
  /** Why the rule is not evaluated per target, when it is not. */
  note?: string;
  counts: Record<RuleState, number>;
  /** The targets it holds (waiting or blocked), with why. */
  held: (DryRunTarget & { state: Exclude<RuleState, 'passed'>; reason: string; nextEvaluationAt?: string })[];
}

const NOT_GATES: Partial<Record<string, string>> = {
  retry: 'acts when a job fails: holds no release',
  verification: 'acts after jobs run: holds no release',
  planValidationOpa: 'evaluated on each release’s plan when it runs, not in a dry run',
};

export function dryRunPolicy(
  policyId: string,
  rules: readonly PolicyRule[],
  evaluated: readonly { target: DryRunTarget; facts: ReleaseFacts }[],
  now: Date,
): DryRunRule[] {
  const results: DryRunRule[] = rules.map((rule, index) => {
    const kind = ruleKind(rule);
    return {
      index,
      kind,
      ...(NOT_GATES[kind] ? { note: NOT_GATES[kind] } : {}),
      counts: { passed: 0, waiting: 0, blocked: 0 },
      held: [],
    };
  });
  const indexOf = new Map(rules.map((rule, index) => [rule.id, index]));
  for (const { target, facts } of evaluated) {
    // The gates judge version selectors together; a dry run judges each rule on its own.
    const selectorEvaluations: RuleEvaluation[] = rules.flatMap((rule) => {
      if (!rule.versionSelector) return [];
      const selected = versionSelected([rule], facts.version, facts);
      return [
        selected.ok
          ? {
              kind: 'versionSelector',
              policyId,
              ruleId: rule.id,
              state: 'passed',
              reason: 'the version is selected',
            }
          : {
              kind: 'versionSelector',
              policyId,
              ruleId: rule.id,
              state: 'blocked',
              reason: `excluded by version selector ${selected.failing}`,
            },
      ];
    });
    const evaluations = [
      ...selectorEvaluations,
      ...policyRuleEvaluations(facts, now).filter(
        (evaluation) => evaluation.policyId === policyId && evaluation.ruleId !== undefined,
      ),
    ];
    for (const evaluation of evaluations) {
      const result = results[indexOf.get(evaluation.ruleId!)!]!;
      if (result.note) continue;
      result.counts[evaluation.state]++;
      if (evaluation.state !== 'passed') {
        result.held.push({
          ...target,
          state: evaluation.state,
          reason: evaluation.reason,
          ...(evaluation.nextEvaluationAt ? { nextEvaluationAt: evaluation.nextEvaluationAt } : {}),
        });
      }
    }
  }
  return results;
}
