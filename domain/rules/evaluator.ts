import type { PolicyRule } from '../policies';
import type { RuleKind } from '../ruleKinds';
import type { DeploymentFields, EnvironmentFields, ResourceFields, VersionFields } from '../selectors';

/**
 * The one shape every rule a release waits at is evaluated in (docs/design.md "Release workflow"):
 * an evaluator reads its slice of the release's facts and answers a verdict per rule. Pure and
 * deterministic: the release workflow replays it on the facts an activity read, with the
 * workflow's clock, so its history shows why a release waited.
 *
 * A rule is `passed`, `waiting` (it may pass later: approvals, soak time, windows, cooldown, the
 * target busy with another release) or `blocked` (it will not pass for this version: a version
 * selector that excludes it, a rejection).
 */

export type RuleState = 'passed' | 'waiting' | 'blocked';

export interface RuleEvaluation {
  kind: RuleKind | 'target' | 'version' | 'versionDependency' | 'hold';
  policyId?: string;
  ruleId?: string;
  state: RuleState;
  reason: string;
  /** When the rule may change without anything else happening (a window opens, soak time ends). */
  nextEvaluationAt?: string;
  /**
   * What would let the rule pass: for a progression rule, successes in an environment; for a
   * version dependency, a new current version of that deployment on the resource.
   */
  waitingOn?: { environmentId: string; successes: number } | { deploymentId: string };
  /** The policy skip that let the rule pass (docs/behaviour.md "Policy skips"). */
  skipId?: string;
}

export interface VersionFacts extends VersionFields {
  createdAt: string;
}

/** What every rule may read: the version, its target's records, and the policies that apply there. */
export interface TargetFacts {
  version: VersionFacts;
  deployment: DeploymentFields;
  environment: EnvironmentFields;
  resource: ResourceFields;
  /** Enabled policies whose selector matches the target, highest priority first. */
  policies: { id: string; name: string; rules: PolicyRule[] }[];
}

/**
 * A rule kind's evaluation, which its module (domain/rules/<kind>.ts) exports: the verdicts of its
 * rules on a release's facts at `now` (none when no rule of its kind applies). `Facts` is the slice
 * of the facts it reads.
 */
export interface RuleEvaluator<Facts> {
  kind: RuleEvaluation['kind'];
  evaluate: (facts: Facts, now: Date) => RuleEvaluation[];
}

/** One rule's verdict, before it is named by its kind, policy and rule. */
export type Verdict = Pick<RuleEvaluation, 'state' | 'reason' | 'nextEvaluationAt' | 'waitingOn'>;

/** A rule of kind `K` as its judge sees it: its id and its own fields. */
export interface KindRule<K extends RuleKind> {
  id: string;
  spec: NonNullable<PolicyRule[K]>;
}

/** Every rule of kind `kind` among the facts' policies, in their order, each with the verdict `judge` gives it. */
export function eachRuleOf<K extends RuleKind>(
  facts: Pick<TargetFacts, 'policies'>,
  kind: K,
  judge: (rule: KindRule<K>) => Verdict,
): RuleEvaluation[] {
  return facts.policies.flatMap((policy) =>
    policy.rules.flatMap((rule) => {
      const spec = rule[kind] as NonNullable<PolicyRule[K]> | undefined;
      if (spec === undefined) return [];
      return [{ kind, policyId: policy.id, ruleId: rule.id, ...judge({ id: rule.id, spec }) }];
    }),
  );
}

/**
 * The last instant a `Date` holds. Rules saved before durations had a maximum may name a time past
 * it; formatting one must not throw, or the workflow task would fail on every attempt.
 */
const LAST_INSTANT_MS = 8.64e15;

/** An instant as a rule's verdict states it, bounded by the last instant a `Date` holds. */
export const instantIso = (ms: number) => new Date(Math.min(ms, LAST_INSTANT_MS)).toISOString();
