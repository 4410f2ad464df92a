import type { EntityManager } from '@mikro-orm/postgresql';
import type { Database } from '../db/database';
import type { SecretBox } from '../db/secrets';
import { recordApprovalScope } from '../engine/executor';
import type { ApprovalScopeRecorded } from '../domain/activityResults';

/** The approval scope workflow's one step. */
export function createApprovalActivities({ orm, secrets }: { orm: Database; secrets: SecretBox }) {
  return {
    async recordApprovalScope(approvalId: string, decision: number): Promise<ApprovalScopeRecorded> {
      return recordApprovalScope(orm.em.fork() as EntityManager, secrets, approvalId, decision);
    },
  };
}
