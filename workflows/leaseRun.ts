import { condition, continueAsNew, patched, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { LeaseTimer, type LeaseOutcome, type LeaseWorkflowInput } from '../domain/leaseTimer';

const steps = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '10 seconds' },
});

/** Leases started with their deadline sleep on it at once, without reading the claim first. */
const DEADLINE_FROM_START = 'lease-deadline-from-start';
/** A lease whose time ran out expires every lapsed claim, its own among them, in one statement. */
const SWEEP = 'lease-sweeps-lapsed-claims';
/**
 * A wake is cleared when it is acted on, not at the top of each round: a wake that came with the
 * first task (a report right after the claim) was otherwise cleared before the lease slept, and the
 * lease slept until the deadline and ended `gone` instead of `released`.
 */
const WAKE_KEPT = 'lease-wake-kept-until-acted-on';

/**
 * One lease's run: the steps (local activities, timers, continue-as-new) its decisions
 * (domain/leaseTimer.ts) choose. The patches are asked in the order recorded histories expect
 * (test/fixtures/histories/lease-*.json): the deadline's at the start, only for a lease started with
 * one; the wake's at the top of each round; the sweep's when the time ran out.
 */
export class LeaseRun {
  private readonly timer: LeaseTimer;
  private woken = false;

  constructor(private readonly input: LeaseWorkflowInput) {
    this.timer = new LeaseTimer(input, input.expiresAt !== undefined && patched(DEADLINE_FROM_START));
  }

  /** The claim ended, or its deadline moved earlier (graceful cancel): look again. */
  wake(): void {
    this.woken = true;
  }

  async run(): Promise<LeaseOutcome> {
    for (;;) {
      if (!patched(WAKE_KEPT)) this.woken = false;
      const look = this.timer.knowsDeadline
        ? this.timer.untilGrantedDeadline(Date.now())
        : LeaseTimer.afterReading(await steps.readClaim(this.input.jobId, this.input.claimId));
      if ('outcome' in look) return look.outcome;
      if (LeaseTimer.sleeps(look.remainingMs)) {
        // A job that heartbeats for days would grow the history without bound; start afresh instead.
        if (workflowInfo().continueAsNewSuggested)
          await continueAsNew<(input: LeaseWorkflowInput) => Promise<LeaseOutcome>>(
            this.timer.continuedInput,
          );
        if (await condition(() => this.woken, look.remainingMs)) {
          this.woken = false;
          continue;
        }
      }
      const outcome = await this.timeRanOut();
      if (outcome) return outcome;
    }
  }

  /** The sweep of a lease whose time ran out (the expiry alone, for leases started before sweeps). */
  private async timeRanOut(): Promise<LeaseOutcome | undefined> {
    if (patched(SWEEP))
      return LeaseTimer.afterSweep(await steps.sweepLapsedClaims(this.input.jobId, this.input.claimId));
    return LeaseTimer.afterExpiry(await steps.expireClaim(this.input.jobId, this.input.claimId));
  }
}
