import { eachRuleOf, type RuleEvaluation, type TargetFacts } from './evaluator';

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

/** What an approval rule reads (docs/behaviour.md "Approvals"). */
export interface ApprovalFacts {
  /** Approval records for this version in this environment. */
  approvals: ApprovalFact[];
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
   * What the release would ship now (engine/planner/shipDigests.ts), read when one of its
   * approvals recorded a digest: an approval for another digest no longer counts.
   */
  shipDigest?: string;
}

/**
 * Ctrlplane's `anyApproval`: enough approvals that cover what the release would ship, from keys
 * other than the version's authors when the rule asks; any rejection blocks.
 */

export const kind = 'anyApproval';

export function evaluate(facts: TargetFacts & ApprovalFacts): RuleEvaluation[] {
  return eachRuleOf(facts, kind, ({ spec }) => {
    const rejection = facts.approvals.find((a) => a.status === 'rejected');
    if (rejection) {
      return {
        state: 'blocked',
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
    if (approved >= spec.minApprovals)
      return { state: 'passed', reason: `${approved} of ${spec.minApprovals} approvals` };
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
    return {
      state: 'waiting',
      reason: `${approved} of ${spec.minApprovals} approvals${creatorsOwn}${otherConfiguration}`,
    };
  });
}
