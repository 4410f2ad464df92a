import { evaluateGates, type GateDecision, type ReleaseFacts } from './gates';
import type { RuleEvaluation } from './rules/evaluator';
import type { ReleasePhase } from './releases';

/**
 * "Why is this target (not) on this version?" — answered with the gates' own code: the facts a
 * release of the version has on the target (the real release's, or a would-be one's) go through
 * `evaluateGates`, exactly as the release workflow does, so an explanation cannot disagree with
 * what the workflow decides. This module adds what a person needs around it: who approved, what
 * holds the target's slot, and what happens next.
 */

export interface SlotJob {
  id: string;
  status: string;
  agent: { id: string; name: string; type: string } | null;
  createdAt: string;
  startedAt: string | null;
}

/** The target's one-active-release slot and its current release. */
export interface TargetSlot {
  activeRelease: { id: string; versionTag: string; phase: ReleasePhase } | null;
  activeJobs: SlotJob[];
  currentRelease: { id: string; versionTag: string } | null;
}

export interface ExplainedRule extends RuleEvaluation {
  /** Who approved, for an approval rule. */
  approvedBy?: string[];
}

/** A selector deciding the target whose evaluation was stopped by its budget (engine/selectors/selectorOverruns.ts). */
export interface TargetSelectorWarning {
  record: { type: 'environment' | 'deployment' | 'policy'; id: string; name: string };
  path: string;
  message: string;
  lastSeenAt: string;
}

export interface Explanation {
  version: { id: string; tag: string };
  /** The version's release on the target, if it has one. */
  release: { id: string; phase: ReleasePhase } | null;
  decision: GateDecision;
  reason: string;
  rules: ExplainedRule[];
  nextEvaluationAt?: string;
  evaluatedAt: string;
  slot: TargetSlot;
  /** What happens next, in a sentence. */
  next: string;
  /** Selectors deciding the target that turned out slow: where they were stopped, they did not match. */
  selectorWarnings?: TargetSelectorWarning[];
}

export interface ExplainInput {
  facts: ReleaseFacts;
  release: { id: string; phase: ReleasePhase } | null;
  slot: TargetSlot;
  now: Date;
  /** The release's latest job, for a release that ended: why it ended (a delivery limit, an agent's message). */
  lastJob?: { id: string; status: string; message: string | null };
  /** Selectors deciding the target that turned out slow (none, most of the time). */
  selectorWarnings: TargetSelectorWarning[];
}

export function explainTarget({
  facts,
  release,
  slot,
  now,
  lastJob,
  selectorWarnings,
}: ExplainInput): Explanation {
  const evaluation = evaluateGates(facts, now);
  const approvers = facts.approvals.filter((a) => a.status === 'approved').map((a) => a.userName);
  const rules = evaluation.rules.map((rule) =>
    rule.kind === 'anyApproval' ? { ...rule, approvedBy: approvers } : rule,
  );
  return {
    version: { id: facts.version.id, tag: facts.version.tag },
    release,
    decision: evaluation.decision,
    reason: evaluation.reason,
    rules,
    ...(evaluation.nextEvaluationAt ? { nextEvaluationAt: evaluation.nextEvaluationAt } : {}),
    evaluatedAt: evaluation.evaluatedAt,
    slot,
    next: nextStep(
      facts.version.tag,
      release,
      evaluation.decision,
      evaluation.reason,
      evaluation.nextEvaluationAt,
      slot,
      lastJob,
    ),
    ...(selectorWarnings.length > 0 ? { selectorWarnings } : {}),
  };
}

/** What the last job of an ended release says of its end, when it says anything. */
const endedBy = (job: ExplainInput['lastJob']) =>
  job?.message ? ` (its job ${job.id} ended ${job.status}: ${job.message})` : '';

function nextStep(
  tag: string,
  release: Explanation['release'],
  decision: GateDecision,
  reason: string,
  nextEvaluationAt: string | undefined,
  slot: TargetSlot,
  lastJob: ExplainInput['lastJob'],
): string {
  if (release?.phase === 'running') {
    const jobs = slot.activeRelease?.id === release.id ? slot.activeJobs : [];
    const held = jobs.map((job) => `${job.id} (${job.status}${job.agent ? ` on ${job.agent.name}` : ''})`);
    return `release ${release.id} is running${held.length > 0 ? `: jobs ${held.join(', ')}` : ''}; it ends when they do`;
  }
  if (release && release.phase !== 'pending') {
    return slot.currentRelease?.id === release.id
      ? `${tag} runs here: release ${release.id} succeeded`
      : `release ${release.id} ended ${release.phase}${endedBy(lastJob)}; a redeploy would start it again`;
  }
  const subject = release ? `release ${release.id}` : `a release of ${tag}`;
  switch (decision) {
    case 'proceed':
      return release
        ? `${subject} starts its jobs at its next look (now)`
        : `${subject} would start its jobs at once`;
    case 'wait':
      return `${subject} waits: ${reason}${nextEvaluationAt ? `; it looks again at ${nextEvaluationAt}` : '; it looks again when that changes'}`;
    case 'blocked':
      return `${subject} is blocked: ${reason}`;
    case 'superseded':
      return `${subject} will not deploy: ${reason}`;
    case 'withdrawn':
      return `${subject} will not deploy: ${reason}`;
  }
}
