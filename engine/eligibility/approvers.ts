import type { EntityManager } from '@mikro-orm/postgresql';
import { uuidArray } from '../../db/sql';
import { authorRole, distinctApproverRefusal, type AuthorRole } from '../../domain/versionAuthors';
import { paced } from '../selectors/pace';
import { enabledPolicies, policiesForTarget, type TargetRecords } from './policyMatching';

/** Release targets read at a time while looking for one a policy applies to. */
const TARGET_BATCH = 1_000;

/**
 * The name of an enabled policy whose approval rule requires another approver than the version's
 * creator and which applies to one of the version's release targets in these environments; null
 * when none does (docs/behaviour.md "Approvals"). Targets are read a batch at a time and matched in
 * paced slices, stopping at the first that a policy applies to.
 */
async function distinctApproverPolicy(
  em: EntityManager,
  workspaceId: string,
  versionId: string,
  environmentIds: readonly string[],
): Promise<string | null> {
  const policies = (await enabledPolicies(em, workspaceId)).filter((policy) =>
    policy.rules.some((rule) => rule.anyApproval?.requireDistinctApprover),
  );
  if (policies.length === 0) return null;
  return paced(workspaceId, async (pacer) => {
    let after = '00000000-0000-0000-0000-000000000000';
    for (;;) {
      const targets = await em.execute<(TargetRecords & { resource_id: string })[]>(
        `SELECT t.resource_id,
                json_build_object('id', d.id, 'name', d.name, 'slug', d.slug, 'metadata', d.metadata) AS deployment,
                json_build_object('id', e.id, 'name', e.name, 'metadata', e.metadata) AS environment,
                json_build_object('kind', r.kind, 'version', r.version, 'name', r.name, 'identifier', r.identifier,
                                  'metadata', r.metadata, 'config', r.config) AS resource
           FROM deployment_version v
           JOIN release_target t ON t.deployment_id = v.deployment_id
           JOIN deployment d ON d.id = t.deployment_id
           JOIN environment e ON e.id = t.environment_id
           JOIN resource r ON r.id = t.resource_id
          WHERE v.id = ? AND t.environment_id = ANY(?::uuid[]) AND t.resource_id > ?
          ORDER BY t.resource_id LIMIT ${TARGET_BATCH}`,
        [versionId, uuidArray(environmentIds), after],
      );
      for (const target of targets) {
        await pacer.pace();
        const [applies] = policiesForTarget(policies, target);
        if (applies) return applies.name;
      }
      if (targets.length < TARGET_BATCH) return null;
      after = targets.at(-1)!.resource_id;
      pacer.rest();
    }
  });
}

/** How a key made a version (created or changed it), if it did, with the version's tag. */
export async function versionAuthorRole(
  em: EntityManager,
  versionId: string,
  keyId: string,
): Promise<{ role?: AuthorRole; tag: string }> {
  const [version] = await em.execute<
    { created_by_id: string | null; changed_by_ids: string[]; tag: string }[]
  >(`SELECT created_by_id, changed_by_ids, tag FROM deployment_version WHERE id = ?`, [versionId]);
  if (!version) return { tag: '' };
  const role = authorRole(
    { createdById: version.created_by_id, changedByIds: version.changed_by_ids },
    keyId,
  );
  return { tag: version.tag, ...(role ? { role } : {}) };
}

/**
 * Why a key may not approve a version (or override its policies) in these environments: it created
 * or changed the version, and a policy there requires another approver. Null when it may.
 */
export async function authorRefusal(
  em: EntityManager,
  workspaceId: string,
  versionId: string,
  environmentIds: readonly string[],
  keyId: string,
  what: 'approve it' | 'override its policies',
): Promise<string | null> {
  const { role, tag } = await versionAuthorRole(em, versionId, keyId);
  if (!role) return null;
  const policy = await distinctApproverPolicy(em, workspaceId, versionId, environmentIds);
  return policy ? distinctApproverRefusal(role, tag, what, policy) : null;
}
