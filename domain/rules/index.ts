import * as anyApproval from './anyApproval';
import type { ApprovalFacts } from './anyApproval';
import * as deploymentDependency from './deploymentDependency';
import type { UpstreamFacts } from './deploymentDependency';
import * as deploymentWindow from './deploymentWindow';
import * as environmentProgression from './environmentProgression';
import type { ProgressionFacts } from './environmentProgression';
import type { RuleEvaluation, RuleEvaluator, TargetFacts } from './evaluator';
import * as gradualRollout from './gradualRollout';
import type { RolloutFacts } from './gradualRollout';
import * as hold from './hold';
import type { HoldFacts } from './hold';
import * as planValidationOpa from './planValidationOpa';
import type { PlanVerdictFacts } from './planValidationOpa';
import * as versionCooldown from './versionCooldown';
import type { DeployedVersionFacts } from './versionCooldown';
import * as versionDependency from './versionDependency';
import type { DependencyFacts } from './versionDependency';
import * as versionSelector from './versionSelector';
import * as waves from './waves';
import type { WaveFacts } from './waves';

/**
 * The rules a release waits at: one module per rule kind (domain/rules/<kind>.ts), each its kind's
 * evaluator (`kind` and `evaluate`) over the slice of the facts it declares. A rule kind is added
 * in its module, in its schema (domain/policies.ts) and here; the engine reads the facts of a new
 * family with a loader of its own (engine/eligibility/facts/).
 */

/** Every slice of the facts the rules read. */
export type RuleFacts = TargetFacts &
  ApprovalFacts &
  ProgressionFacts &
  DependencyFacts &
  UpstreamFacts &
  DeployedVersionFacts &
  RolloutFacts &
  WaveFacts &
  PlanVerdictFacts &
  HoldFacts;

/**
 * The evaluators, in the order a gate evaluation lists their verdicts: a workflow's history
 * records that order, and the first blocked rule and the waiting rules' reasons follow it.
 */
export const RULE_EVALUATORS: readonly RuleEvaluator<RuleFacts>[] = [
  versionSelector,
  anyApproval,
  environmentProgression,
  versionDependency,
  deploymentDependency,
  deploymentWindow,
  versionCooldown,
  gradualRollout,
  waves,
  planValidationOpa,
  hold,
];

/** Each rule's own verdict on the facts at `now`, before policy skips. */
export function evaluateRules(facts: RuleFacts, now: Date): RuleEvaluation[] {
  return RULE_EVALUATORS.flatMap((evaluator) => evaluator.evaluate(facts, now));
}
