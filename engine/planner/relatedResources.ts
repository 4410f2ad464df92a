import type { EntityManager } from '@mikro-orm/postgresql';
import { groupBy } from '../../domain/grouping';
import { findRelated, RELATIONSHIP_SCAN_LIMIT } from '../../domain/relationships';
import type { ResourceFields } from '../../domain/selectors';
import { uuidArray } from '../../db/sql';

type Resource = ResourceFields & { id: string };

export interface RelatedWanted {
  releaseId: string;
  workspaceId: string;
  resource: Resource;
  /** The relationship reference names the release's variables use. */
  references: ReadonlySet<string>;
}

/**
 * For each release whose variables use relationship references, the resource each reference
 * relates to its resource: the rules of that reference in creation order, the first rule that
 * relates a resource winning. Candidates are the workspace's live resources, oldest first, read
 * once per batch and workspace, and only when some release asks.
 */
export async function loadRelatedResources(
  em: EntityManager,
  wanted: readonly RelatedWanted[],
): Promise<Map<string, Record<string, Resource>>> {
  const related = new Map<string, Record<string, Resource>>();
  const names = [...new Set(wanted.flatMap((entry) => [...entry.references]))];
  if (names.length === 0) return related;
  const rules = groupBy(
    await em.execute<{ workspace_id: string; reference: string; cel: string }[]>(
      `SELECT workspace_id, reference, cel FROM relationship_rule
        WHERE workspace_id = ANY(?::uuid[]) AND reference IN (SELECT jsonb_array_elements_text(?::jsonb))
        ORDER BY created_at, id`,
      [uuidArray([...new Set(wanted.map((entry) => entry.workspaceId))]), JSON.stringify(names)],
    ),
    (rule) => `${rule.workspace_id}/${rule.reference}`,
  );
  const candidates = new Map<string, Resource[]>();
  for (const workspaceId of new Set(wanted.map((entry) => entry.workspaceId))) {
    if (!names.some((name) => rules.has(`${workspaceId}/${name}`))) continue;
    candidates.set(
      workspaceId,
      await em.execute<Resource[]>(
        `SELECT id, kind, version, name, identifier, metadata, config FROM resource
          WHERE workspace_id = ? AND deleted_at IS NULL ORDER BY created_at, id LIMIT ?`,
        [workspaceId, RELATIONSHIP_SCAN_LIMIT],
      ),
    );
  }
  for (const entry of wanted) {
    const found: Record<string, Resource> = {};
    for (const name of entry.references) {
      for (const rule of rules.get(`${entry.workspaceId}/${name}`) ?? []) {
        const match = findRelated(rule.cel, entry.resource, candidates.get(entry.workspaceId) ?? []);
        if (match) {
          found[name] = match;
          break;
        }
      }
    }
    related.set(entry.releaseId, found);
  }
  return related;
}
