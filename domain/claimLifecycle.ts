import {
  ACTIVE_JOB_STATUSES,
  JOB_STATUSES,
  canMoveJob,
  isTerminalJobStatus,
  movesInto,
  type JobStatus,
} from './jobStatus';

/**
 * The claim lifecycle of pull agents' jobs (docs/agents.md "Writing your own agent": claims, leases,
 * heartbeats, fencing, requeue, delivery cap, graceful cancel) as one transition table: for each
 * event, the job statuses and claim and cancel states it applies in, what it leaves behind, and the
 * refusal otherwise. The engine's statements (engine/jobMoves/) take their status lists and values
 * from it, and the refusals the API answers are built here, so the SQL and the answers cannot drift.
 */

export const CLAIM_EVENTS = [
  'claim',
  'heartbeat',
  'requeue',
  'report',
  'leaseExpiry',
  'deliveryCap',
  'cancelAsked',
  'cancelAtOnce',
  'cancelDeadline',
] as const;

export type ClaimEvent = (typeof CLAIM_EVENTS)[number];

/**
 * The job's claim as an event finds it: `none` (no claim record), `current` (the write's fence
 * holds: it carries the current claim id, or none while its agent does not enforce claim ids),
 * `stale` (another claim id, or none where one is required), `lapsed` (its deadline has passed).
 */
export type ClaimState = 'none' | 'current' | 'stale' | 'lapsed';

/** The job's cancel: not asked, asked of its agent (graceful cancel), or asked and past its deadline. */
export type CancelState = 'none' | 'asked' | 'overdue';

/** What becomes of the claim record. */
export type ClaimAfter =
  /** A claim record is written (for an agent with a lease) and its lease workflow started. */
  | 'granted'
  /** Its deadline moves to now + its lease, no further than a cancel's deadline. */
  | 'extended'
  /** Its deadline moves back to the cancel's deadline, and its lease workflow is woken. */
  | 'shortened'
  /** It is deleted, and its lease workflow ends. */
  | 'ended'
  /** It ends when the job ends or goes back to the queue, and is kept otherwise. */
  | 'endsOnEndOrQueue'
  | 'kept';

/** The facts an event is decided on. */
export interface ClaimFacts {
  status: JobStatus;
  claim: ClaimState;
  cancel: CancelState;
  /** The hold that keeps the job from agents (docs/behaviour.md "Holds and freezes"), if any. */
  hold?: { id: string; reason: string; by: string };
  /** The claim id the write carried. */
  claimId?: string;
}

export type ClaimRefusalCode =
  | 'not_claimable'
  | 'job_held'
  | 'stale_claim'
  | 'invalid_status_move'
  | 'cancel_requested'
  /** The sweep's: the claim's deadline has not passed (a heartbeat came first), nothing moves. */
  | 'lease_live'
  /** The sweep's: the claim ends, the job stays (not in progress, or its cancel was asked). */
  | 'not_requeued'
  /** Graceful cancel's: no lease holds the job in progress, it is cancelled at once instead. */
  | 'cancelled_at_once'
  /** Its agent was asked to stop it (graceful cancel): it ends by its deadline instead. */
  | 'asked_to_stop'
  /** The reaper's: the job's cancel was not asked. */
  | 'cancel_not_asked';

export interface ClaimRefusal {
  code: ClaimRefusalCode;
  /** Why: for an agent's or a person's event, the API's answer (409 `code`). */
  reason: string;
  /** What becomes of the claim all the same (the sweep ends a lapsed claim whatever its job). */
  claimAfter: 'kept' | 'ended';
}

/**
 * A guard of a transition, in the order they are checked: another event that takes precedence, the
 * claim (the fence), the status (the row's `from`), the move table (domain/jobStatus.ts), a hold,
 * the cancel.
 */
type Guard = 'yields' | 'claim' | 'status' | 'move' | 'hold' | 'cancel';

/** A refusal's answer; the claim is kept unless it says otherwise. */
type Refuse = (
  facts: ClaimFacts,
  to: JobStatus,
) => Omit<ClaimRefusal, 'claimAfter'> & { claimAfter?: 'ended' };

export interface ClaimTransition {
  /** An event that takes precedence where it applies (the job is not this event's then). */
  yieldsTo?: ClaimEvent;
  /** The job statuses it applies in. */
  from: readonly JobStatus[];
  /** The claim states it applies in. */
  claim: readonly ClaimState[];
  /** The cancel states it applies in; a move of the status also obeys `AFTER_A_CANCEL`. */
  cancel: readonly CancelState[];
  /** Whether a hold keeps it from happening. */
  heldBack: boolean;
  /** The status it leaves: a status, the job's own, or the one reported. */
  to: JobStatus | 'unchanged' | 'reported';
  claimAfter: ClaimAfter;
  /** The message it writes on the job, if any. */
  message?: string;
  /**
   * The refusal when a guard fails; a guard without one cannot fail for this event (a failed move
   * is always `invalid_status_move`).
   */
  refusals: Partial<Record<Exclude<Guard, 'move'>, Refuse>>;
}

/**
 * After a cancel was asked (docs/behaviour.md "Cancel"), a job is never given back to the queue
 * (nobody may claim it again), and once its deadline has passed it may only end `cancelled` or
 * `failure`. Before the deadline its agent may still report how it ended.
 */
export const AFTER_A_CANCEL = {
  never: ['queued'] as readonly JobStatus[],
  pastDeadline: ['cancelled', 'failure'] as readonly JobStatus[],
};

/** Why a move is refused for a job whose cancel was asked, if it is (`AFTER_A_CANCEL`). */
export function cancelledJobMoveRefusal(to: JobStatus, deadlinePassed: boolean): string | undefined {
  if (AFTER_A_CANCEL.never.includes(to))
    return 'its cancel was asked: it is not given back to the queue; report how it ended';
  if (deadlinePassed && !AFTER_A_CANCEL.pastDeadline.includes(to)) {
    return `its cancel deadline has passed: it may only end ${AFTER_A_CANCEL.pastDeadline.join(' or ')}`;
  }
  return undefined;
}

/** A report's or a requeue's fence (docs/agents.md: "Whenever a status, heartbeat or requeue carries a `claim_id`"). */
function staleWrite({ claimId, status }: ClaimFacts) {
  return {
    code: 'stale_claim' as const,
    reason: claimId
      ? `claim ${claimId} is not the current claim of the job, which is ${status}`
      : 'this agent requires the current claim_id',
  };
}

function notFrom(statuses: readonly JobStatus[]): Refuse {
  return ({ status }) => ({
    code: 'invalid_status_move',
    reason: `The job is ${status}, not ${statuses.join(' or ')}`,
  });
}

const notAMove: Refuse = ({ status }, to) => ({
  code: 'invalid_status_move',
  reason: `A job cannot move from ${status} to ${to}`,
});

function afterACancel(facts: ClaimFacts, to: JobStatus) {
  return {
    code: 'cancel_requested' as const,
    reason: `The job cannot move to ${to}: ${cancelledJobMoveRefusal(to, facts.cancel === 'overdue')}`,
  };
}

const notClaimable: Refuse = ({ status }) => ({
  code: 'not_claimable',
  reason: `The job is ${status}, not queued: another claim got it first`,
});

const askedToStop: Refuse = () => ({
  code: 'asked_to_stop',
  reason: 'its agent was asked to stop it: it ends by its deadline',
});

const CLAIMED: JobStatus = 'in_progress';
const REQUEUE_FROM: readonly JobStatus[] = [CLAIMED];

export const CLAIM_LIFECYCLE: Readonly<Record<ClaimEvent, ClaimTransition>> = {
  /** docs/agents.md "Writing your own agent" 2: a queued job is handed out once. */
  claim: {
    from: ['queued'],
    claim: ['none'],
    cancel: ['none'],
    heldBack: true,
    to: CLAIMED,
    claimAfter: 'granted',
    refusals: {
      // A queued job holds no claim, nor is its cancel ever asked of an agent (none holds it).
      claim: notClaimable,
      status: notClaimable,
      cancel: notClaimable,
      hold: ({ hold }) => ({
        code: 'job_held',
        reason: `The job is held by hold ${hold?.id} of ${hold?.by}: ${hold?.reason}`,
      }),
    },
  },
  /** Moves the lease's end; the job stays as it is. */
  heartbeat: {
    from: JOB_STATUSES,
    claim: ['current'],
    cancel: ['none', 'asked', 'overdue'],
    heldBack: false,
    to: 'unchanged',
    claimAfter: 'extended',
    refusals: {
      claim: ({ claimId, status }) => ({
        code: 'stale_claim',
        reason: claimId
          ? `claim ${claimId} is not the current claim of the job, which is ${status}`
          : `the job is ${status} and holds no claim this heartbeat may extend`,
      }),
    },
  },
  /** An agent (or an operator) gives a claimed job back to the queue. */
  requeue: {
    from: REQUEUE_FROM,
    claim: ['none', 'current'],
    cancel: ['none'],
    heldBack: false,
    to: 'queued',
    claimAfter: 'ended',
    message: 'given back to the queue',
    refusals: { claim: staleWrite, status: notFrom(REQUEUE_FROM), cancel: afterACancel },
  },
  /** An agent's status report: any move of the move table (domain/jobStatus.ts). */
  report: {
    from: JOB_STATUSES,
    claim: ['none', 'current'],
    cancel: ['none', 'asked', 'overdue'],
    heldBack: false,
    to: 'reported',
    claimAfter: 'endsOnEndOrQueue',
    refusals: { claim: staleWrite, cancel: afterACancel },
  },
  /** The sweep (docs/design.md "Lease workflow"): a lapsed claim ends, its in_progress job is queued again. */
  leaseExpiry: {
    from: [CLAIMED],
    claim: ['lapsed'],
    cancel: ['none'],
    heldBack: false,
    to: 'queued',
    claimAfter: 'ended',
    message: 'the lease expired without a heartbeat; back in the queue',
    refusals: {
      claim: () => ({ code: 'lease_live', reason: 'the claim has not lapsed' }),
      status: ({ status }) => ({
        code: 'not_requeued',
        reason: `the job is ${status}, not in progress: its claim ends, the job stays`,
        claimAfter: 'ended',
      }),
      cancel: () => ({
        code: 'not_requeued',
        reason: 'its cancel was asked: its claim ends, and so does the job (cancelDeadline)',
        claimAfter: 'ended',
      }),
    },
  },
  /**
   * A job whose leases expired as often as its agent allows (`deliveryCapReached`) ends before any
   * agent claims it again.
   */
  deliveryCap: {
    from: ['queued'],
    claim: ['none'],
    cancel: ['none'],
    heldBack: false,
    to: 'failure',
    claimAfter: 'ended',
    refusals: { claim: staleWrite, status: notFrom(['queued']), cancel: askedToStop },
  },
  /** Graceful cancel: a job an agent holds under a lease is asked to stop by a deadline. */
  cancelAsked: {
    from: [CLAIMED],
    claim: ['current', 'lapsed'],
    cancel: ['none'],
    heldBack: false,
    to: 'unchanged',
    claimAfter: 'shortened',
    refusals: {
      claim: () => ({ code: 'cancelled_at_once', reason: 'no lease holds the job: it is cancelled at once' }),
      status: ({ status }) => ({
        code: 'cancelled_at_once',
        reason: `the job is ${status}, not in progress: it is cancelled at once`,
      }),
      cancel: () => ({ code: 'asked_to_stop', reason: 'its agent was asked to stop it already' }),
    },
  },
  /** Every other job of a cancelled release or run that has not ended, at once. */
  cancelAtOnce: {
    yieldsTo: 'cancelAsked',
    from: movesInto('cancelled'),
    claim: ['none', 'current', 'stale', 'lapsed'],
    cancel: ['none'],
    heldBack: false,
    to: 'cancelled',
    claimAfter: 'ended',
    refusals: {
      yields: () => ({
        code: 'asked_to_stop',
        reason: 'a lease holds the job in progress: its agent is asked to stop it',
      }),
      status: notFrom(movesInto('cancelled')),
      cancel: askedToStop,
    },
  },
  /**
   * The reaper ends a job asked to cancel once its claim lapsed — at the cancel's deadline, or
   * before it when its agent stopped heartbeating — whatever its agent does.
   */
  cancelDeadline: {
    from: ACTIVE_JOB_STATUSES,
    claim: ['none', 'current', 'lapsed'],
    cancel: ['asked', 'overdue'],
    heldBack: false,
    to: 'cancelled',
    claimAfter: 'ended',
    message: 'cancelled: the agent did not stop the job within the grace period',
    refusals: {
      claim: staleWrite,
      status: notFrom(ACTIVE_JOB_STATUSES),
      cancel: () => ({ code: 'cancel_not_asked', reason: 'its cancel was not asked' }),
    },
  },
};

export type ClaimDecision =
  | { allowed: true; to: JobStatus; claimAfter: 'granted' | 'extended' | 'shortened' | 'ended' | 'kept' }
  | { allowed: false; refusal: ClaimRefusal };

/** The claim ends when the job ends or goes back to the queue (a report's, or any other move's). */
export function claimEndsWith(to: JobStatus): boolean {
  return isTerminalJobStatus(to) || to === 'queued';
}

/** Narrows a report (the server's own, on a job it just handed out): the statuses it applies in. */
export interface ClaimDecisionOptions {
  /** The status a report asks for (the job's own when it reports none). */
  reported?: JobStatus;
  /** Statuses narrower than the row's `from`; refused as `invalid_status_move` naming them. */
  from?: readonly JobStatus[];
}

/**
 * The event's verdict on the facts: the guards are checked in the order claim (the fence), status,
 * move table, hold, cancel; a move of the status also obeys `AFTER_A_CANCEL`.
 */
export function decideClaimEvent(
  event: ClaimEvent,
  facts: ClaimFacts,
  options: ClaimDecisionOptions = {},
): ClaimDecision {
  const row = CLAIM_LIFECYCLE[event];
  const to = resolveTo(row.to, facts.status, options.reported);
  const failed = failedGuard(row, facts, to, options.from);
  if (failed) {
    const refuse = refusalFor(event, row, failed, options.from);
    return { allowed: false, refusal: { claimAfter: 'kept', ...refuse(facts, to) } };
  }
  const claimAfter =
    row.claimAfter === 'endsOnEndOrQueue' ? (claimEndsWith(to) ? 'ended' : 'kept') : row.claimAfter;
  return { allowed: true, to, claimAfter };
}

function resolveTo(to: ClaimTransition['to'], status: JobStatus, reported: JobStatus | undefined): JobStatus {
  if (to === 'unchanged') return status;
  if (to === 'reported') return reported ?? status;
  return to;
}

function failedGuard(
  row: ClaimTransition,
  facts: ClaimFacts,
  to: JobStatus,
  narrowed: readonly JobStatus[] | undefined,
): Guard | undefined {
  if (row.yieldsTo && decideClaimEvent(row.yieldsTo, facts).allowed) return 'yields';
  if (!row.claim.includes(facts.claim)) return 'claim';
  if (!row.from.includes(facts.status) || (narrowed && !narrowed.includes(facts.status))) return 'status';
  if (!canMoveJob(facts.status, to)) return 'move';
  if (row.heldBack && facts.hold) return 'hold';
  if (!row.cancel.includes(facts.cancel)) return 'cancel';
  const moves = to !== facts.status;
  if (moves && facts.cancel !== 'none' && cancelledJobMoveRefusal(to, facts.cancel === 'overdue'))
    return 'cancel';
  return undefined;
}

function refusalFor(
  event: ClaimEvent,
  row: ClaimTransition,
  failed: Guard,
  narrowed: readonly JobStatus[] | undefined,
): Refuse {
  if (failed === 'move') return notAMove;
  if (failed === 'status' && narrowed) return notFrom(narrowed);
  const refuse = row.refusals[failed];
  if (!refuse) throw new Error(`the ${event} event has no refusal for its ${failed} guard`);
  return refuse;
}

/**
 * The refusal an event's guard gives on these facts, whatever the other guards say: a claim that
 * lost a race answers its status refusal even when the job, read again, is claimable.
 */
export function guardRefusal(
  event: ClaimEvent,
  guard: Exclude<Guard, 'move'>,
  facts: ClaimFacts,
): ClaimRefusal {
  const row = CLAIM_LIFECYCLE[event];
  const refuse = refusalFor(event, row, guard, undefined);
  return { claimAfter: 'kept', ...refuse(facts, statusAfter(event, facts.status)) };
}

/** The status an event leaves a job in that is in `status` (a report's: the same, when it reports none). */
export function statusAfter(event: ClaimEvent, status: JobStatus): JobStatus {
  return resolveTo(CLAIM_LIFECYCLE[event].to, status, undefined);
}

/** The status an event moves every job it applies to into: for statements that write it set-based. */
export function statusInto(event: ClaimEvent): JobStatus {
  const { to } = CLAIM_LIFECYCLE[event];
  if (to === 'unchanged' || to === 'reported') throw new Error(`the ${event} event moves into no one status`);
  return to;
}

/**
 * A write's fence against the job's claim record: a write that carries a claim id must carry the
 * current one, and under the agent's `enforceClaimId` every write must carry it.
 */
export function fencedClaim(
  record: { claimId: string; enforce: boolean } | undefined,
  claimId: string | undefined,
): ClaimState {
  if (claimId !== undefined) return claimId === record?.claimId ? 'current' : 'stale';
  if (!record) return 'none';
  return record.enforce ? 'stale' : 'current';
}

/** A job's cancel state from its row: asked (`cancel_requested_at`), and whether its deadline passed. */
export function cancelStateOf(asked: boolean, deadlinePassed: boolean): CancelState {
  if (!asked) return 'none';
  return deadlinePassed ? 'overdue' : 'asked';
}

/** The delivery cap (docs/agents.md: `config.maxDeliveries`): reached once the leases expired that often. */
export function deliveryCapReached(expiredLeases: number, maxDeliveries: number): boolean {
  return expiredLeases >= maxDeliveries;
}

/** The message of a job ended by the delivery cap. */
export function deliveryCapMessage(expiredLeases: number): string {
  return `delivery limit reached after ${expiredLeases} leases`;
}
