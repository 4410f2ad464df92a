import { isNewerVersion, versionSelected } from './eligibility';
import type { JobStatus } from './jobStatus';
import type { PolicyRule, RuleKind } from './policies';
import { RULE_DEFAULTS } from './ruleDefaults';
import { MAX_RULE_SECONDS, ruleTimerMs } from './ruleLimits';
import {
  selectorContext,
  selectorMatches,
  type DeploymentFields,
  type EnvironmentFields,
  type ResourceFields,
  type VersionFields,
} from './selectors';
import { windowState } from './windows';
import type { PlanVerdict } from './planValidation';
import { activeSkip, skippedReason, type SkipFact } from './policySkips';
import { holdAttribution, holdState, pinnedVersion, type HoldFact } from './holds';

/**
 * Policy gates of a release (docs/design.md "Release workflow"): every rule of every enabled policy whose selector matches
 * the release target applies, together (AND). Pure and deterministic — the release workflow evaluates
 * it on facts an activity read, with the workflow's clock — so its history shows why a release
 * waited.
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

export interface VersionFacts extends VersionFields {
  createdAt: string;
}

export interface ApprovalFact {
  userId: string;
  userName: string;
  status: 'approved' | 'rejected';
  reason: string | null;
  at: string;
  /** What the release would ship when this approval let it go (older histories only; `binding` replaced it). */
  digest?: string;
  /**
   * Whether the approval covers what the release would ship now (engine/planner/shipDigests.ts):
   * `covered` counts; `otherConfiguration` (its scope holds other digests), `pending` (its scope is
   * being recorded) and `unbound` (given before approvals had scopes) do not.
   */
  binding?: 'covered' | 'otherConfiguration' | 'pending' | 'unbound';
}

export interface ProgressionFact {
  ruleId: string;
  environments: {
    id: string;
    name: string;
    /** Release targets of the deployment in that environment. */
    targets: number;
    /** Completion times (ascending) of this version's jobs there that ended in a success status. */
    successes: string[];
  }[];
}

/** A version's dependency on another deployment, with that deployment's current version on the resource. */
export interface DependencyFact {
  deploymentId: string;
  deploymentName: string;
  versionSelector: string;
  currentVersion: VersionFacts | null;
}

export interface ReleaseFacts {
  release: { id: string; environmentId: string; createdAt: string };
  version: VersionFacts;
  deployment: DeploymentFields;
  environment: EnvironmentFields;
  resource: ResourceFields;
  /** False once the release target no longer exists (resource deleted, selector or link changed). */
  targetExists: boolean;
  /** Enabled policies whose selector matches the target, highest priority first. */
  policies: { id: string; name: string; rules: PolicyRule[] }[];
  /** Approval records for this version in this environment. */
  approvals: ApprovalFact[];
  progression: ProgressionFact[];
  /** The release holding the target, if any (its jobs are active). */
  activeReleaseId: string | null;
  /** When the version deployed (or deploying) on the target was created, for cooldowns. */
  deployedVersionCreatedAt: string | null;
  deployedVersionId: string | null;
  /** Newer releases of the same target that are not finished, with their versions. */
  newerReleases: { id: string; version: VersionFacts; rejected: boolean }[];
  /**
   * The other deployments' current versions on the target's resource, read only when a
   * `deploymentDependency` rule applies (absent otherwise, and in older histories).
   */
  upstream?: { deployment: DeploymentFields; version: VersionFacts }[];
  /** The version's dependencies (absent in histories recorded before dependencies existed). */
  versionDependencies?: DependencyFact[];
  /** This target's place in the version's rollout to this environment (read only when a gradual rollout applies). */
  rollout: { position: number; total: number; startedAt: string };
  /**
   * Each `planValidationOpa` rule's verdict on the release's plan, by rule id: evaluated by the
   * release's workflow when it loads its facts, read as recorded by an explanation (absent in a
   * fan-out's batch, which then leaves the release to its workflow, and for a rule not yet evaluated
   * on the plan).
   */
  planValidation?: Record<string, PlanVerdict>;
  /**
   * The policy skips that apply to this release (its version, on its environment or resource or on
   * every target), unexpired when read; absent when there are none, and in older histories.
   */
  skips?: SkipFact[];
  /**
   * The id of the API key that created the version, read by approval rules that require another
   * approver (absent for versions created before it was recorded, and in older histories).
   */
  versionCreatedBy?: string;
  /**
   * The keys that created or changed the version (domain/versionAuthors.ts), when any changed it;
   * absent otherwise (the creator alone) and in older histories.
   */
  versionAuthors?: string[];
  /**
   * What the release would ship now (domain: engine/planner/shipDigests.ts), read when one of its
   * approvals recorded a digest: an approval for another digest no longer counts.
   */
  shipDigest?: string;
  /**
   * The holds whose selector matches the target (a pin only on its version's deployment), unexpired
   * when read, oldest first; absent when there are none, and in older histories.
   */
  holds?: HoldFact[];
}

const rulesOf = <K extends RuleKind>(facts: ReleaseFacts, kind: K) =>
  facts.policies.flatMap((policy) =>
    policy.rules
      .filter((rule) => rule[kind] !== undefined)
      .map((rule) => ({
        policyId: policy.id,
        ruleId: rule.id,
        spec: rule[kind]! as NonNullable<PolicyRule[K]>,
      })),
  );

/** Whether every versionSelector rule admits the version on this target. */
function versionSelectedHere(facts: ReleaseFacts, version: VersionFacts) {
  return versionSelected(
    facts.policies.flatMap((policy) => policy.rules),
    version,
    facts,
  );
}

/**
 * The last instant a `Date` holds. Rules saved before durations had a maximum may name a time past
 * it; formatting one must not throw, or the workflow task would fail on every attempt.
 */
const LAST_INSTANT_MS = 8.64e15;
const iso = (ms: number) => new Date(Math.min(ms, LAST_INSTANT_MS)).toISOString();

function approvalRules(facts: ReleaseFacts): RuleEvaluation[] {
  return rulesOf(facts, 'anyApproval').map(({ policyId, ruleId, spec }) => {
    const rejection = facts.approvals.find((a) => a.status === 'rejected');
    if (rejection) {
      return {
        kind: 'anyApproval' as const,
        policyId,
        ruleId,
        state: 'blocked' as const,
        reason: `rejected by ${rejection.userName}${rejection.reason ? `: ${rejection.reason}` : ''}`,
      };
    }
    const authors = spec.requireDistinctApprover
      ? (facts.versionAuthors ?? (facts.versionCreatedBy ? [facts.versionCreatedBy] : []))
      : [];
    const byAuthor = (a: ApprovalFact) => authors.includes(a.userId);
    const approvals = facts.approvals.filter((a) => a.status === 'approved');
    const bindingOf = (a: ApprovalFact) =>
      a.binding ??
      (a.digest !== undefined && facts.shipDigest !== undefined && a.digest !== facts.shipDigest
        ? 'otherConfiguration'
        : 'covered');
    const approved = approvals.filter((a) => !byAuthor(a) && bindingOf(a) === 'covered').length;
    const creatorsOwn = !approvals.some(byAuthor)
      ? ''
      : facts.versionAuthors
        ? '; approvals by the keys that created or changed the version do not count'
        : "; the version's creator's approval does not count";
    const notCovering = (binding: NonNullable<ApprovalFact['binding']>, says: string) => {
      const names = approvals.filter((a) => !byAuthor(a) && bindingOf(a) === binding).map((a) => a.userName);
      return names.length > 0 ? `; ${names.join(', ')} ${says}` : '';
    };
    const otherConfiguration =
      notCovering('otherConfiguration', 'approved for a different configuration') +
      notCovering('pending', 'approved; what the approval covers is being recorded') +
      notCovering('unbound', 'approved before approvals were bound to what ships: approve again');
    return approved >= spec.minApprovals
      ? {
          kind: 'anyApproval' as const,
          policyId,
          ruleId,
          state: 'passed' as const,
          reason: `${approved} of ${spec.minApprovals} approvals`,
        }
      : {
          kind: 'anyApproval' as const,
          policyId,
          ruleId,
          state: 'waiting' as const,
          reason: `${approved} of ${spec.minApprovals} approvals${creatorsOwn}${otherConfiguration}`,
        };
  });
}

function progressionRules(facts: ReleaseFacts, now: number): RuleEvaluation[] {
  return rulesOf(facts, 'environmentProgression').map(({ policyId, ruleId, spec }) => {
    const base = { kind: 'environmentProgression' as const, policyId, ruleId };
    const environments = facts.progression.find((p) => p.ruleId === ruleId)?.environments ?? [];
    if (environments.length === 0)
      return { ...base, state: 'passed' as const, reason: 'no environment matches the dependency' };
    let readyAt = 0;
    for (const env of environments) {
      const needed = Math.max(1, Math.ceil(((spec.minimumSuccessPercentage ?? 100) / 100) * env.targets));
      if (env.successes.length < needed) {
        return {
          ...base,
          state: 'waiting' as const,
          reason: `${env.name}: ${env.successes.length} of ${env.targets} targets succeeded, ${needed} needed`,
          waitingOn: { environmentId: env.id, successes: needed },
        };
      }
      const reached = Date.parse(env.successes[needed - 1]!);
      if (spec.maximumAgeHours !== undefined && now - reached > spec.maximumAgeHours * 3_600_000) {
        return {
          ...base,
          state: 'blocked' as const,
          reason: `${env.name}: its success is older than ${spec.maximumAgeHours} h`,
        };
      }
      const soakMinutes = spec.minimumSoakTimeMinutes ?? RULE_DEFAULTS.minimumSoakTimeMinutes;
      readyAt = Math.max(readyAt, reached + soakMinutes * 60_000);
    }
    return readyAt > now
      ? {
          ...base,
          state: 'waiting' as const,
          reason: `soaking until ${iso(readyAt)}`,
          nextEvaluationAt: iso(readyAt),
        }
      : { ...base, state: 'passed' as const, reason: 'dependency environments succeeded and soaked' };
  });
}

/**
 * The version's dependencies: each waits until the dependency's current version on this resource
 * matches its selector (a release of that deployment succeeding here wakes it).
 */
function dependencyRules(facts: ReleaseFacts): RuleEvaluation[] {
  return (facts.versionDependencies ?? []).map((dependency) => {
    const base = { kind: 'versionDependency' as const };
    const current = dependency.currentVersion;
    if (
      current &&
      selectorMatches('version', dependency.versionSelector, { version: selectorContext.version(current) })
    ) {
      return {
        ...base,
        state: 'passed' as const,
        reason: `${dependency.deploymentName} runs ${current.tag}`,
      };
    }
    return {
      ...base,
      state: 'waiting' as const,
      reason: current
        ? `${dependency.deploymentName} runs ${current.tag} here, which does not match ${dependency.versionSelector}`
        : `${dependency.deploymentName} has no version deployed here yet`,
      waitingOn: { deploymentId: dependency.deploymentId },
    };
  });
}

/** Ctrlplane's deployment dependencies: waits until another deployment's current version here matches. */
function deploymentDependencyRules(facts: ReleaseFacts): RuleEvaluation[] {
  return rulesOf(facts, 'deploymentDependency').map(({ policyId, ruleId, spec }) => {
    const base = { kind: 'deploymentDependency' as const, policyId, ruleId };
    const match = (facts.upstream ?? []).find(({ deployment, version }) =>
      selectorMatches('dependency', spec.dependsOn, {
        deployment: selectorContext.deployment(deployment),
        version: selectorContext.version(version),
      }),
    );
    return match
      ? {
          ...base,
          state: 'passed' as const,
          reason: `${match.deployment.name} runs ${match.version.tag} here`,
        }
      : {
          ...base,
          state: 'waiting' as const,
          reason: `no deployment runs a version here that matches ${spec.dependsOn}`,
        };
  });
}

function windowRules(facts: ReleaseFacts, now: Date): RuleEvaluation[] {
  return rulesOf(facts, 'deploymentWindow').map(({ policyId, ruleId, spec }) => {
    const base = { kind: 'deploymentWindow' as const, policyId, ruleId };
    const state = windowState({ ...spec, timezone: spec.timezone ?? RULE_DEFAULTS.timezone }, now);
    const at = state.changesAt?.toISOString();
    // A stored rule that cannot be evaluated holds releases back, allow and deny windows alike.
    if (state.problem) {
      return {
        ...base,
        state: 'blocked' as const,
        reason: `the window's rule cannot be evaluated: ${state.problem}`,
      };
    }
    if (spec.allowWindow ?? RULE_DEFAULTS.allowWindow) {
      if (state.inside)
        return { ...base, state: 'passed' as const, reason: `inside an allow window until ${at}` };
      if (!at) return { ...base, state: 'blocked' as const, reason: 'the allow window never opens again' };
      return {
        ...base,
        state: 'waiting' as const,
        reason: state.searchedUntil
          ? `outside the allow window; none opens before ${at} (the rule is read again then)`
          : `outside the allow window; it opens at ${at}`,
        nextEvaluationAt: at,
      };
    }
    return state.inside
      ? {
          ...base,
          state: 'waiting' as const,
          reason: `inside a deny window until ${at}`,
          nextEvaluationAt: at,
        }
      : { ...base, state: 'passed' as const, reason: 'outside deny windows' };
  });
}

function cooldownRules(facts: ReleaseFacts, now: number): RuleEvaluation[] {
  return rulesOf(facts, 'versionCooldown').map(({ policyId, ruleId, spec }) => {
    const base = { kind: 'versionCooldown' as const, policyId, ruleId };
    if (!facts.deployedVersionCreatedAt || facts.deployedVersionId === facts.version.id) {
      return { ...base, state: 'passed' as const, reason: 'nothing deployed to cool down from' };
    }
    const until = Date.parse(facts.deployedVersionCreatedAt) + spec.intervalSeconds * 1000;
    return until > now
      ? {
          ...base,
          state: 'waiting' as const,
          reason: `cooling down until ${iso(until)}`,
          nextEvaluationAt: iso(until),
        }
      : { ...base, state: 'passed' as const, reason: 'cooldown elapsed' };
  });
}

function gradualRolloutRules(facts: ReleaseFacts, now: number): RuleEvaluation[] {
  return rulesOf(facts, 'gradualRollout').map(({ policyId, ruleId, spec }) => {
    const base = { kind: 'gradualRollout' as const, policyId, ruleId };
    const { position, total, startedAt } = facts.rollout;
    const spacingMs =
      spec.rolloutType === 'linear'
        ? spec.timeScaleInterval * 1000
        : (spec.timeScaleInterval * 1000) / Math.max(total, 1);
    const at = Date.parse(startedAt) + position * spacingMs;
    return at > now
      ? {
          ...base,
          state: 'waiting' as const,
          reason: `target ${position + 1} of ${total} is scheduled for ${iso(at)}`,
          nextEvaluationAt: iso(at),
        }
      : { ...base, state: 'passed' as const, reason: `target ${position + 1} of ${total} is due` };
  });
}

/** An OPA engine that failed (not installed, timed out) is tried again this much later. */
const PLAN_VALIDATION_RETRY_MS = 60_000;
/** Deny messages quoted in a reason, at most. */
const QUOTED_DENIALS = 5;

function planValidationRules(facts: ReleaseFacts, now: number): RuleEvaluation[] {
  return rulesOf(facts, 'planValidationOpa').map(({ policyId, ruleId, spec }) => {
    const base = { kind: 'planValidationOpa' as const, policyId, ruleId };
    const verdict = facts.planValidation?.[ruleId];
    if (!verdict)
      return {
        ...base,
        state: 'waiting' as const,
        reason: `plan validation ${spec.name} is pending: no verdict on this plan yet`,
      };
    if ('error' in verdict) {
      return {
        ...base,
        state: 'waiting' as const,
        reason: `plan validation ${spec.name} could not run: ${verdict.error}`,
        nextEvaluationAt: iso(now + PLAN_VALIDATION_RETRY_MS),
      };
    }
    if (verdict.denials.length === 0)
      return { ...base, state: 'passed' as const, reason: `plan validation ${spec.name} passed` };
    const quoted = verdict.denials.slice(0, QUOTED_DENIALS).join('; ');
    const more =
      verdict.denials.length > QUOTED_DENIALS ? ` (and ${verdict.denials.length - QUOTED_DENIALS} more)` : '';
    return {
      ...base,
      state: 'blocked' as const,
      reason: `plan validation ${spec.name} denies: ${quoted}${more}`,
    };
  });
}

/**
 * Each hold on the target (domain/holds.ts), as a rule whose id is the hold's (so a policy skip of
 * it is a break-glass): a block in force waits until it ends; a pin in force passes its own version
 * and holds every other one back.
 */
function holdRules(facts: ReleaseFacts, now: Date): RuleEvaluation[] {
  return (facts.holds ?? []).map((hold) => {
    const base = { kind: 'hold' as const, ruleId: hold.id };
    const state = holdState(hold, now);
    const next = state.changesAt ? { nextEvaluationAt: state.changesAt.toISOString() } : {};
    if (!state.inForce) {
      return {
        ...base,
        state: 'passed' as const,
        reason: state.changesAt
          ? `outside the freeze of ${hold.createdBy.name} until ${state.changesAt.toISOString()}: ${hold.reason}`
          : `the hold of ${hold.createdBy.name} has ended`,
      };
    }
    const attribution = holdAttribution(hold, state);
    if (hold.effect === 'block')
      return { ...base, state: 'waiting' as const, reason: `held ${attribution}`, ...next };
    return hold.version!.id === facts.version.id
      ? { ...base, state: 'passed' as const, reason: `pinned here to ${hold.version!.tag} ${attribution}` }
      : {
          ...base,
          state: 'waiting' as const,
          reason: `pinned to ${hold.version!.tag} ${attribution}`,
          ...next,
        };
  });
}

/** Every policy rule's evaluation, and the version's dependencies': what a version must pass on the target. */
export function policyRuleEvaluations(facts: ReleaseFacts, nowDate: Date): RuleEvaluation[] {
  return ruleEvaluations(facts, nowDate).map((rule) => {
    const skip =
      rule.state !== 'passed' && rule.ruleId ? activeSkip(facts.skips, rule.ruleId, nowDate) : undefined;
    if (!skip) return rule;
    const { nextEvaluationAt: _next, waitingOn: _on, ...passed } = rule;
    return { ...passed, state: 'passed', reason: skippedReason(skip), skipId: skip.id };
  });
}

/** Each rule's own verdict, before skips. */
function ruleEvaluations(facts: ReleaseFacts, nowDate: Date): RuleEvaluation[] {
  const now = nowDate.getTime();
  const selected = versionSelectedHere(facts, facts.version);
  return [
    selected.ok
      ? { kind: 'versionSelector', state: 'passed', reason: 'the version is selected' }
      : {
          kind: 'versionSelector',
          state: 'blocked',
          reason: `excluded by version selector ${selected.failing}`,
        },
    ...approvalRules(facts),
    ...progressionRules(facts, now),
    ...dependencyRules(facts),
    ...deploymentDependencyRules(facts),
    ...windowRules(facts, nowDate),
    ...cooldownRules(facts, now),
    ...gradualRolloutRules(facts, now),
    ...planValidationRules(facts, now),
    ...holdRules(facts, nowDate),
  ];
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
  // The pinned version deploys where a newer one is ready or runs: supersession does not apply to it.
  const pinnedHere = pinnedVersion(facts.holds, nowDate)?.id === facts.version.id;
  const newer = pinnedHere
    ? undefined
    : facts.newerReleases.find((candidate) => {
        return (
          candidate.version.status === 'ready' &&
          !candidate.rejected &&
          versionSelectedHere(facts, candidate.version).ok
        );
      });
  if (newer) {
    return {
      decision: 'superseded',
      reason: `superseded by version ${newer.version.tag} (release ${newer.id})`,
      rules: [],
      evaluatedAt,
    };
  }
  if (
    !pinnedHere &&
    facts.deployedVersionId &&
    facts.deployedVersionId !== facts.version.id &&
    isNewerVersion({ id: facts.deployedVersionId, createdAt: facts.deployedVersionCreatedAt! }, facts.version)
  ) {
    return {
      decision: 'superseded',
      reason: 'a newer version already runs on the target',
      rules: [],
      evaluatedAt,
    };
  }

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
      ...(times.length > 0 ? { nextEvaluationAt: iso(Math.min(...times)) } : {}),
    };
  }
  return { decision: 'proceed', reason: 'every rule passed', rules, evaluatedAt };
}

/** Job statuses a retry rule counts by default (Ctrlplane's defaults). */
export function retryCounts(statuses: readonly JobStatus[] | undefined, maxRetries: number): JobStatus[] {
  if (statuses && statuses.length > 0) return [...statuses];
  return maxRetries > 0
    ? ['failure', 'invalid_integration', 'invalid_job_agent']
    : ['failure', 'invalid_integration', 'invalid_job_agent', 'successful'];
}

export interface RetryDecision {
  retry: boolean;
  reason: string;
  /** Wait this long before the next attempt. */
  backoffMs: number;
}

/**
 * After a failed attempt: whether the release tries again. Without a retry rule a release gets one
 * job. With several retry rules the strictest (fewest retries) applies.
 */
export function decideRetry(rules: PolicyRule[], attempts: readonly { status: JobStatus }[]): RetryDecision {
  const retryRules = rules.flatMap((rule) => (rule.retry ? [rule.retry] : []));
  if (retryRules.length === 0)
    return { retry: false, reason: 'no retry rule: one job per release', backoffMs: 0 };
  const rule = retryRules.reduce((strictest, candidate) =>
    candidate.maxRetries < strictest.maxRetries ? candidate : strictest,
  );
  const counted = retryCounts(rule.retryOnStatuses, rule.maxRetries);
  const used = attempts.filter((attempt) => counted.includes(attempt.status)).length;
  if (used > rule.maxRetries) {
    return { retry: false, reason: `${used - 1} of ${rule.maxRetries} retries used`, backoffMs: 0 };
  }
  // Stored durations are bounded where they are used: a rule stored before rules had maxima, or
  // anything that is not a number, never becomes a timer the workflow cannot start.
  const base = ruleTimerMs(rule.backoffSeconds ?? 0);
  const backoff = rule.backoffStrategy === 'exponential' ? base * 2 ** Math.max(0, used - 1) : base;
  // Exponential backoff over 100 retries outgrows any timer: a backoff never exceeds a rule's longest duration.
  const capped = Math.min(backoff, ruleTimerMs(rule.maxBackoffSeconds ?? MAX_RULE_SECONDS));
  return { retry: true, reason: `retry ${used} of ${rule.maxRetries}`, backoffMs: capped };
}
