import type { EntityManager } from '@mikro-orm/postgresql';
import { expireClaim, readClaim } from '../db/jobMoves';
import type { Database } from '../db/database';

/** The lease workflow's database steps; both fenced by the claim id, both idempotent. */
export function createLeaseActivities({ orm }: { orm: Database }) {
  const fork = () => orm.em.fork() as EntityManager;
  return {
    async readClaim(jobId: string, claimId: string): Promise<{ remainingMs: number } | null> {
      return readClaim(fork(), jobId, claimId);
    },
    async expireClaim(jobId: string, claimId: string): Promise<boolean> {
      return expireClaim(fork(), jobId, claimId);
    },
  };
}
