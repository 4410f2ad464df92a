import type { ClaimReading, SweepOutcome } from './activityResults';

/**
 * The lease workflow's decisions (docs/design.md "Lease workflow"), pure: the workflow
 * (workflows/lease.ts over workflows/leaseRun.ts) only runs the steps they choose. A lease sleeps
 * until its claim's deadline — the one granted with the claim, once, then the one the database
 * holds — and, when its time ran out, sweeps every lapsed claim; a claim a heartbeat extended
 * meanwhile is read again and slept on.
 */

export interface LeaseWorkflowInput {
  jobId: string;
  claimId: string;
  /** The claim's end when it was granted, by the database's clock (absent after continue-as-new). */
  expiresAt?: string;
}

/**
 * `released`: the claim ended (a report, a requeue, a cancel) and woke the lease; `expired`: this
 * lease's sweep expired it; `gone`: when its time ran out the claim had already ended (another
 * lease's sweep expired it, or it ended while this lease was not yet running).
 */
export type LeaseOutcome = 'released' | 'expired' | 'gone';

/** How long the lease sleeps, or how it ends when its claim is found ended. */
export type LeaseLook = { remainingMs: number } | { outcome: LeaseOutcome };

export class LeaseTimer {
  /** The deadline granted with the claim, not yet slept on. */
  private granted: string | undefined;

  /** `startsFromDeadline`: the lease sleeps on the granted deadline at once, without reading the claim. */
  constructor(
    private readonly input: LeaseWorkflowInput,
    startsFromDeadline: boolean,
  ) {
    this.granted = startsFromDeadline ? input.expiresAt : undefined;
  }

  /** Whether this round's time left is the granted deadline's (once), rather than the claim's as read. */
  get knowsDeadline(): boolean {
    return this.granted !== undefined;
  }

  /** The time left until the granted deadline, by the workflow's clock; it is used once. */
  untilGrantedDeadline(nowMs: number): LeaseLook {
    if (this.granted === undefined) throw new Error('no granted deadline left to sleep on');
    const remainingMs = Math.max(0, Date.parse(this.granted) - nowMs);
    this.granted = undefined;
    return { remainingMs };
  }

  /** The claim as read: its time left, or `released` when it has ended. */
  static afterReading(reading: ClaimReading | null): LeaseLook {
    return reading ? { remainingMs: reading.remainingMs } : { outcome: 'released' };
  }

  /** Whether the lease sleeps (time left) or sweeps now (its time ran out). */
  static sleeps(remainingMs: number): boolean {
    return remainingMs > 0;
  }

  /** After a sweep: how the lease ends, or nothing when its claim lives on (a heartbeat extended it). */
  static afterSweep(verdict: SweepOutcome): LeaseOutcome | undefined {
    return verdict === 'held' ? undefined : verdict;
  }

  /** After the expiry step of leases started before sweeps: `expired`, or nothing to look again. */
  static afterExpiry(expired: boolean): LeaseOutcome | undefined {
    return expired ? 'expired' : undefined;
  }

  /** The input of the run that continues this one: the claim, read afresh (no granted deadline). */
  get continuedInput(): LeaseWorkflowInput {
    return { jobId: this.input.jobId, claimId: this.input.claimId };
  }
}
