import type { EntityManager } from '@mikro-orm/postgresql';
import type { Database } from '../db/database';
import { applyHold } from '../engine/executor';
import type { HoldApplied } from '../domain/activityResults';

/** The hold workflow's one step: the hold applied as it stands now, in one transaction. */
export function createHoldActivities({ orm }: { orm: Database }) {
  return {
    async applyHold(workspaceId: string, holdId: string): Promise<HoldApplied> {
      return (orm.em.fork() as EntityManager).transactional((tx) => applyHold(tx, workspaceId, holdId));
    },
  };
}
