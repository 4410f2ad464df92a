import type { EntityManager } from '@mikro-orm/postgresql';
import { expireLapsedClaims, readClaim } from '../engine/jobMoves';
import type { Database } from '../db/database';
import type { ClaimReading, SweepOutcome } from '../domain/activityResults';

/** The lease workflow's database steps; fenced by the claim id, idempotent. */
export function createLeaseActivities({ orm }: { orm: Database }) {
  const fork = () => orm.em.fork() as EntityManager;
  /** Expires every lapsed claim; then where this one stands. */
  async function sweep(jobId: string, claimId: string): Promise<SweepOutcome> {
    const expired = await expireLapsedClaims(fork());
    if (expired.some((claim) => claim.jobId === jobId && claim.claimId === claimId)) return 'expired';
    return (await readClaim(fork(), jobId, claimId)) ? 'held' : 'gone';
  }
  return {
    async readClaim(jobId: string, claimId: string): Promise<ClaimReading | null> {
      return readClaim(fork(), jobId, claimId);
    },
    /**
     * The sweep of a lease whose time ran out: `expired` when it expired this claim, `gone` when the
     * claim had already ended, `held` when it lives on (a heartbeat moved its deadline, or a report
     * holds the job right now).
     */
    sweepLapsedClaims: sweep,
    /** The step of leases started before sweeps (their histories call it): true when this claim expired. */
    async expireClaim(jobId: string, claimId: string): Promise<boolean> {
      return (await sweep(jobId, claimId)) === 'expired';
    },
  };
}
