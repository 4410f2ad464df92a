/**
 * Who made a version what it ships (docs/behaviour.md "Approvals"): the key that created it and
 * every key that changed it since (its job configuration, its status, any field). Under an approval
 * rule that requires another approver, none of them may approve it, pass the rule with a skip, or
 * override the policies with a redeploy: a change always has a second pair of eyes.
 */
export interface VersionAuthorship {
  createdById: string | null;
  changedByIds: readonly string[];
}

export type AuthorRole = 'created' | 'changed';

/** How a key made the version, if it did. */
export function authorRole(version: VersionAuthorship, keyId: string): AuthorRole | undefined {
  if (version.createdById === keyId) return 'created';
  return version.changedByIds.includes(keyId) ? 'changed' : undefined;
}

/** Why an author's request is refused under a policy that requires another approver. */
export function distinctApproverRefusal(
  role: AuthorRole,
  versionTag: string,
  what: 'approve it' | 'skip its approval rule' | 'override its policies',
  policyName: string,
): string {
  return `The key that ${role} version ${versionTag} cannot ${what}: policy "${policyName}" requires another approver`;
}
