import { isNewerVersion, versionSelected } from './eligibility';
import { pinnedVersion } from './holds';
import { activeSkip, skippedReason, type SkipFact } from './policySkips';
import { evaluateRules, type RuleFacts } from './rules';
import { instantIso, type RuleEvaluation, type VersionFacts } from './rules/evaluator';

/**
 * Policy gates of a release (docs/design.md "Release workflow"): every rule of every enabled policy
 * whose selector matches the release target applies, together (AND), with the version's
 * dependencies and the target's holds. Each rule kind is evaluated in its own module
 * (domain/rules/); this module combines their verdicts with what no rule decides: a target that is
 * gone, a version no longer ready, a newer version that supersedes this one, policy skips, and the
 * target's one slot. Pure and deterministic, like the rules: the release workflow replays it.
 */

export type GateDecision =
  /** Create the jobs now. */
  | 'proceed'
  /** Wait for a signal (approval, the target freed) or until nextEvaluationAt. */
  | 'wait'
  /** A rule will not pass for this version; wait in case it changes (a rejection withdrawn). */
  | 'blocked'
  /** A newer version that can deploy here has its own release. */
  | 'superseded'
  /** The version is no longer ready, or the release target is gone. */
  | 'withdrawn';

export interface GateEvaluation {
  decision: GateDecision;
  reason: string;
  rules: RuleEvaluation[];
  nextEvaluationAt?: string;
  evaluatedAt: string;
}

/** What a release's gates read: every rule's slice of the facts, and what the combination reads. */
export interface ReleaseFacts extends RuleFacts {
  release: { id: string; environmentId: string; createdAt: string };
  /** False once the release target no longer exists (resource deleted, selector or link changed). */
  targetExists: boolean;
  /** The release holding the target, if any (its jobs are active). */
  activeReleaseId: string | null;
  /** Newer releases of the same target that are not finished, with their versions. */
  newerReleases: { id: string; version: VersionFacts; rejected: boolean }[];
  /**
   * The policy skips that apply to this release (its version, on its environment or resource or on
   * every target), unexpired when read; absent when there are none, and in older histories.
   */
  skips?: SkipFact[];
}

/** Every policy rule's evaluation, and the version's dependencies': what a version must pass on the target. */
export function policyRuleEvaluations(facts: ReleaseFacts, nowDate: Date): RuleEvaluation[] {
  return evaluateRules(facts, nowDate).map((rule) => {
    const skip =
      rule.state !== 'passed' && rule.ruleId ? activeSkip(facts.skips, rule.ruleId, nowDate) : undefined;
    if (!skip) return rule;
    const { nextEvaluationAt: _next, waitingOn: _on, ...passed } = rule;
    return { ...passed, state: 'passed', reason: skippedReason(skip), skipId: skip.id };
  });
}

/**
 * Whether the version of these facts passes every policy rule on the target now, and its
 * dependencies: Ctrlplane's "eligible versions". Rules with an id in `excludedRuleIds` are skipped.
 */
export function passesEveryRule(
  facts: ReleaseFacts,
  nowDate: Date,
  excludedRuleIds: ReadonlySet<string> = new Set(),
): boolean {
  const kept = {
    ...facts,
    policies: facts.policies.map((policy) => ({
      ...policy,
      rules: policy.rules.filter((rule) => !excludedRuleIds.has(rule.id)),
    })),
  };
  return policyRuleEvaluations(kept, nowDate).every((rule) => rule.state === 'passed');
}

/** Why the release gives way to another version, if it does (docs/design.md "Invariants", 3). */
function supersession(facts: ReleaseFacts, nowDate: Date): string | undefined {
  // The pinned version deploys where a newer one is ready or runs: supersession does not apply to it.
  if (pinnedVersion(facts.holds, nowDate)?.id === facts.version.id) return undefined;
  const rules = facts.policies.flatMap((policy) => policy.rules);
  const newer = facts.newerReleases.find(
    (candidate) =>
      candidate.version.status === 'ready' &&
      !candidate.rejected &&
      versionSelected(rules, candidate.version, facts).ok,
  );
  if (newer) return `superseded by version ${newer.version.tag} (release ${newer.id})`;
  const runsNewer =
    facts.deployedVersionId &&
    facts.deployedVersionId !== facts.version.id &&
    isNewerVersion(
      { id: facts.deployedVersionId, createdAt: facts.deployedVersionCreatedAt! },
      facts.version,
    );
  return runsNewer ? 'a newer version already runs on the target' : undefined;
}

export function evaluateGates(facts: ReleaseFacts, nowDate: Date): GateEvaluation {
  const evaluatedAt = nowDate.toISOString();
  if (!facts.targetExists) {
    return { decision: 'withdrawn', reason: 'the release target no longer exists', rules: [], evaluatedAt };
  }
  if (facts.version.status !== 'ready') {
    return {
      decision: 'withdrawn',
      reason: `version ${facts.version.tag} is ${facts.version.status}`,
      rules: [],
      evaluatedAt,
    };
  }
  const superseded = supersession(facts, nowDate);
  if (superseded) return { decision: 'superseded', reason: superseded, rules: [], evaluatedAt };

  const rules: RuleEvaluation[] = [
    ...policyRuleEvaluations(facts, nowDate),
    facts.activeReleaseId && facts.activeReleaseId !== facts.release.id
      ? {
          kind: 'target',
          state: 'waiting',
          reason: `the target is busy with release ${facts.activeReleaseId}`,
        }
      : { kind: 'target', state: 'passed', reason: 'the target is free' },
  ];
  const blocked = rules.find((rule) => rule.state === 'blocked');
  if (blocked) return { decision: 'blocked', reason: blocked.reason, rules, evaluatedAt };
  const waiting = rules.filter((rule) => rule.state === 'waiting');
  if (waiting.length > 0) {
    const times = waiting.flatMap((rule) =>
      rule.nextEvaluationAt ? [Date.parse(rule.nextEvaluationAt)] : [],
    );
    return {
      decision: 'wait',
      reason: waiting.map((rule) => rule.reason).join('; '),
      rules,
      evaluatedAt,
      ...(times.length > 0 ? { nextEvaluationAt: instantIso(Math.min(...times)) } : {}),
    };
  }
  return { decision: 'proceed', reason: 'every rule passed', rules, evaluatedAt };
}
