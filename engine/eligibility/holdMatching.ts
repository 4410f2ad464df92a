import type { EntityManager } from '@mikro-orm/postgresql';
import type { HoldFact } from '../../domain/holds';
import { selectorMatches } from '../../domain/selectors';
import { uuidArray } from '../../db/sql';
import { targetContext, type TargetRecords } from './policyMatching';

/** A hold as stored, with what matching it to targets needs: its workspace, selector and a pin's deployment. */
export interface StoredHold extends HoldFact {
  workspaceId: string;
  selector: string;
  /** A pin's version's deployment: a pin covers that deployment's targets only. */
  deploymentId?: string;
}

interface HoldRow {
  id: string;
  workspace_id: string;
  selector: string;
  effect: HoldFact['effect'];
  version_id: string | null;
  version_tag: string | null;
  deployment_id: string | null;
  reason: string;
  expires_at: Date | null;
  schedule: HoldFact['schedule'] | null;
  created_by_id: string;
  created_by_name: string;
}

/** The unexpired holds of these workspaces, oldest first; with `holdIds`, those holds, expired or not. */
export async function loadWorkspaceHolds(
  sql: Pick<EntityManager, 'execute'>,
  workspaceIds: readonly string[],
  holdIds?: readonly string[],
): Promise<StoredHold[]> {
  return readHolds(sql, uuidArray(workspaceIds), holdIds ? uuidArray(holdIds) : null);
}

/** `loadWorkspaceHolds` of ids already made `uuid[]` parameters (db/sql.ts `uuidArray`). */
export async function readHolds(
  sql: Pick<EntityManager, 'execute'>,
  workspaceIds: string,
  holdIds: string | null,
): Promise<StoredHold[]> {
  const rows = await sql.execute<HoldRow[]>(
    `SELECT h.id, h.workspace_id, h.selector, h.effect, h.version_id, v.tag AS version_tag, v.deployment_id,
            h.reason, h.expires_at, h.schedule, h.created_by_id, h.created_by_name
       FROM hold h LEFT JOIN deployment_version v ON v.id = h.version_id
      WHERE h.workspace_id = ANY(?::uuid[])
        AND (?::uuid[] IS NULL AND (h.expires_at IS NULL OR h.expires_at > now()) OR h.id = ANY(?::uuid[]))
      ORDER BY h.created_at, h.id`,
    [workspaceIds, holdIds, holdIds],
  );
  return rows.map(storedHold);
}

function storedHold(row: HoldRow): StoredHold {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    selector: row.selector,
    effect: row.effect,
    ...(row.version_id ? { version: { id: row.version_id, tag: row.version_tag! } } : {}),
    ...(row.deployment_id ? { deploymentId: row.deployment_id } : {}),
    reason: row.reason,
    ...(row.expires_at ? { expiresAt: new Date(row.expires_at).toISOString() } : {}),
    ...(row.schedule ? { schedule: row.schedule } : {}),
    createdBy: { id: row.created_by_id, name: row.created_by_name },
  };
}

/** Whether a hold covers a target: its selector matches, and a pin's deployment is the target's. */
export function holdCovers(hold: StoredHold, target: TargetRecords & { deployment_id: string }): boolean {
  if (hold.deploymentId !== undefined && hold.deploymentId !== target.deployment_id) return false;
  return selectorMatches('target', hold.selector, targetContext(target));
}

/** The holds of the target's workspace that cover it, as its gates read them. */
export function holdsOnTarget(
  holds: readonly StoredHold[],
  target: TargetRecords & { deployment_id: string; workspace_id: string },
): HoldFact[] {
  return holds
    .filter((hold) => hold.workspaceId === target.workspace_id && holdCovers(hold, target))
    .map(({ workspaceId: _w, selector: _s, deploymentId: _d, ...fact }) => fact);
}
