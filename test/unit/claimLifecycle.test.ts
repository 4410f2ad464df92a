import {
  CLAIM_EVENTS,
  CLAIM_LIFECYCLE,
  cancelStateOf,
  decideClaimEvent,
  deliveryCapMessage,
  deliveryCapReached,
  fencedClaim,
  guardRefusal,
  statusInto,
  type CancelState,
  type ClaimDecision,
  type ClaimEvent,
  type ClaimFacts,
  type ClaimState,
} from '../../domain/claimLifecycle';
import {
  ACTIVE_JOB_STATUSES,
  JOB_STATUSES,
  TERMINAL_JOB_STATUSES,
  type JobStatus,
} from '../../domain/jobStatus';

/**
 * The claim lifecycle's transition table (domain/claimLifecycle.ts; docs/agents.md "Writing your own
 * agent"): every allowed move of each event, and each refusal with the code and reason the API
 * answers (the reasons are the answers agents read: they must not drift).
 */

function facts(status: JobStatus, claim: ClaimState, cancel: CancelState = 'none', extra = {}): ClaimFacts {
  return { status, claim, cancel, ...extra };
}

function allowed(decision: ClaimDecision): { to: JobStatus; claimAfter: string } {
  if (!decision.allowed) throw new Error(`refused: ${decision.refusal.code} ${decision.refusal.reason}`);
  return { to: decision.to, claimAfter: decision.claimAfter };
}

function refused(decision: ClaimDecision): { code: string; reason: string; claimAfter: string } {
  if (decision.allowed) throw new Error(`allowed: into ${decision.to}`);
  return decision.refusal;
}

const HOLD = { id: 'h1', reason: 'freeze', by: 'ops' };
const CLAIM_STATES: ClaimState[] = ['none', 'current', 'stale', 'lapsed'];
const CANCEL_STATES: CancelState[] = ['none', 'asked', 'overdue'];

describe('the claim lifecycle table', () => {
  it('has a row for every event, each moving only along the move table', () => {
    expect(Object.keys(CLAIM_LIFECYCLE).sort()).toEqual([...CLAIM_EVENTS].sort());
    for (const event of CLAIM_EVENTS) {
      for (const status of JOB_STATUSES)
        for (const claim of CLAIM_STATES)
          for (const cancel of CANCEL_STATES) {
            const decision = decideClaimEvent(event, facts(status, claim, cancel));
            if (!decision.allowed) continue;
            expect(CLAIM_LIFECYCLE[event].from).toContain(status);
            expect(CLAIM_LIFECYCLE[event].claim).toContain(claim);
            expect(CLAIM_LIFECYCLE[event].cancel).toContain(cancel);
          }
    }
  });

  it('answers every combination of facts of every event, allowed or with a refusal', () => {
    for (const event of CLAIM_EVENTS)
      for (const status of JOB_STATUSES)
        for (const claim of CLAIM_STATES)
          for (const cancel of CANCEL_STATES)
            expect(() => decideClaimEvent(event, facts(status, claim, cancel))).not.toThrow();
  });
});

describe('claim', () => {
  it('moves a queued job to in_progress and grants a claim', () => {
    expect(allowed(decideClaimEvent('claim', facts('queued', 'none')))).toEqual({
      to: 'in_progress',
      claimAfter: 'granted',
    });
    expect(statusInto('claim')).toBe('in_progress');
  });

  it('refuses a job that is not queued: another claim got it first (not_claimable)', () => {
    for (const status of JOB_STATUSES.filter((s) => s !== 'queued'))
      expect(refused(decideClaimEvent('claim', facts(status, 'none')))).toEqual({
        code: 'not_claimable',
        reason: `The job is ${status}, not queued: another claim got it first`,
        claimAfter: 'kept',
      });
    expect(refused(decideClaimEvent('claim', facts('in_progress', 'current'))).code).toBe('not_claimable');
  });

  it('refuses a queued job a hold keeps back (job_held), naming the hold', () => {
    expect(refused(decideClaimEvent('claim', facts('queued', 'none', 'none', { hold: HOLD })))).toEqual({
      code: 'job_held',
      reason: 'The job is held by hold h1 of ops: freeze',
      claimAfter: 'kept',
    });
  });

  it('answers a lost race by its status refusal even when the job, read again, is claimable', () => {
    expect(guardRefusal('claim', 'status', facts('queued', 'none'))).toEqual({
      code: 'not_claimable',
      reason: 'The job is queued, not queued: another claim got it first',
      claimAfter: 'kept',
    });
  });

  it('refuses a job whose cancel was asked', () => {
    expect(refused(decideClaimEvent('claim', facts('queued', 'none', 'asked'))).code).toBe('not_claimable');
  });
});

describe('heartbeat', () => {
  it('extends a current claim, whatever the job status and its cancel, leaving the status', () => {
    for (const status of ['in_progress', 'action_required'] as const)
      for (const cancel of CANCEL_STATES)
        expect(allowed(decideClaimEvent('heartbeat', facts(status, 'current', cancel)))).toEqual({
          to: status,
          claimAfter: 'extended',
        });
  });

  it('refuses a stale claim id, naming the job status (stale_claim)', () => {
    expect(
      refused(decideClaimEvent('heartbeat', facts('queued', 'stale', 'none', { claimId: 'c1' }))),
    ).toEqual({
      code: 'stale_claim',
      reason: 'claim c1 is not the current claim of the job, which is queued',
      claimAfter: 'kept',
    });
  });

  it('refuses a job without a claim to extend (stale_claim)', () => {
    expect(refused(decideClaimEvent('heartbeat', facts('cancelled', 'none')))).toEqual({
      code: 'stale_claim',
      reason: 'the job is cancelled and holds no claim this heartbeat may extend',
      claimAfter: 'kept',
    });
    expect(refused(decideClaimEvent('heartbeat', facts('in_progress', 'lapsed'))).code).toBe('stale_claim');
  });
});

describe('requeue', () => {
  it('gives an in_progress job back to the queue, its claim ended, with the table message', () => {
    for (const claim of ['none', 'current'] as const)
      expect(allowed(decideClaimEvent('requeue', facts('in_progress', claim)))).toEqual({
        to: 'queued',
        claimAfter: 'ended',
      });
    expect(CLAIM_LIFECYCLE.requeue.message).toBe('given back to the queue');
  });

  it('refuses a stale claim id, or none where the agent enforces one (stale_claim)', () => {
    expect(
      refused(decideClaimEvent('requeue', facts('in_progress', 'stale', 'none', { claimId: 'c1' }))).reason,
    ).toBe('claim c1 is not the current claim of the job, which is in_progress');
    expect(refused(decideClaimEvent('requeue', facts('in_progress', 'stale')))).toEqual({
      code: 'stale_claim',
      reason: 'this agent requires the current claim_id',
      claimAfter: 'kept',
    });
  });

  it('refuses a job not in progress (invalid_status_move)', () => {
    expect(refused(decideClaimEvent('requeue', facts('successful', 'none')))).toEqual({
      code: 'invalid_status_move',
      reason: 'The job is successful, not in_progress',
      claimAfter: 'kept',
    });
  });

  it('refuses a job whose cancel was asked (cancel_requested), before its deadline or after', () => {
    for (const cancel of ['asked', 'overdue'] as const)
      expect(refused(decideClaimEvent('requeue', facts('in_progress', 'current', cancel)))).toEqual({
        code: 'cancel_requested',
        reason:
          'The job cannot move to queued: its cancel was asked: it is not given back to the queue; report how it ended',
        claimAfter: 'kept',
      });
  });

  it('narrowed by the caller, names the statuses it was narrowed to', () => {
    expect(
      refused(
        decideClaimEvent('report', facts('queued', 'none'), {
          reported: 'invalid_job_agent',
          from: ['in_progress'],
        }),
      ).reason,
    ).toBe('The job is queued, not in_progress');
  });
});

describe('report', () => {
  it('moves along the move table; a final status or the queue ends the claim, others keep it', () => {
    expect(
      allowed(decideClaimEvent('report', facts('in_progress', 'current'), { reported: 'successful' })),
    ).toEqual({
      to: 'successful',
      claimAfter: 'ended',
    });
    expect(
      allowed(decideClaimEvent('report', facts('in_progress', 'current'), { reported: 'queued' })),
    ).toEqual({
      to: 'queued',
      claimAfter: 'ended',
    });
    expect(
      allowed(decideClaimEvent('report', facts('in_progress', 'current'), { reported: 'action_required' })),
    ).toEqual({ to: 'action_required', claimAfter: 'kept' });
    expect(
      allowed(decideClaimEvent('report', facts('triggered', 'none'), { reported: 'in_progress' })),
    ).toEqual({
      to: 'in_progress',
      claimAfter: 'kept',
    });
  });

  it('reporting the status a job already has, or none, is allowed even once it ended', () => {
    expect(
      allowed(decideClaimEvent('report', facts('successful', 'none'), { reported: 'successful' })).to,
    ).toBe('successful');
    expect(allowed(decideClaimEvent('report', facts('failure', 'none'))).to).toBe('failure');
  });

  it('refuses a move the move table does not have (invalid_status_move)', () => {
    expect(
      refused(decideClaimEvent('report', facts('successful', 'none'), { reported: 'in_progress' })),
    ).toEqual({
      code: 'invalid_status_move',
      reason: 'A job cannot move from successful to in_progress',
      claimAfter: 'kept',
    });
  });

  it('refuses a stale claim id even for a report repeating the status (stale_claim)', () => {
    expect(
      refused(
        decideClaimEvent('report', facts('successful', 'stale', 'none', { claimId: 'c1' }), {
          reported: 'successful',
        }),
      ).reason,
    ).toBe('claim c1 is not the current claim of the job, which is successful');
  });

  it('after a cancel was asked, lets the agent report how it ended before the deadline', () => {
    for (const reported of ['successful', 'failure', 'cancelled', 'action_required'] as const)
      expect(decideClaimEvent('report', facts('in_progress', 'current', 'asked'), { reported }).allowed).toBe(
        true,
      );
  });

  it('after the cancel deadline, allows only cancelled or failure (cancel_requested)', () => {
    for (const reported of ['cancelled', 'failure'] as const)
      expect(
        decideClaimEvent('report', facts('in_progress', 'current', 'overdue'), { reported }).allowed,
      ).toBe(true);
    expect(
      refused(
        decideClaimEvent('report', facts('in_progress', 'current', 'overdue'), { reported: 'successful' }),
      ),
    ).toEqual({
      code: 'cancel_requested',
      reason:
        'The job cannot move to successful: its cancel deadline has passed: it may only end cancelled or failure',
      claimAfter: 'kept',
    });
    expect(
      allowed(
        decideClaimEvent('report', facts('in_progress', 'current', 'overdue'), { reported: 'in_progress' }),
      ).to,
    ).toBe('in_progress');
  });
});

describe('lease expiry', () => {
  it('queues a lapsed in_progress job again, its claim ended, with the expiry message', () => {
    expect(allowed(decideClaimEvent('leaseExpiry', facts('in_progress', 'lapsed')))).toEqual({
      to: 'queued',
      claimAfter: 'ended',
    });
    expect(CLAIM_LIFECYCLE.leaseExpiry.message).toBe(
      'the lease expired without a heartbeat; back in the queue',
    );
  });

  it('leaves a claim a heartbeat extended first (lease_live)', () => {
    expect(refused(decideClaimEvent('leaseExpiry', facts('in_progress', 'current')))).toEqual({
      code: 'lease_live',
      reason: 'the claim has not lapsed',
      claimAfter: 'kept',
    });
  });

  it('ends the lapsed claim of a job not in progress, the job staying (not_requeued)', () => {
    expect(refused(decideClaimEvent('leaseExpiry', facts('action_required', 'lapsed')))).toEqual({
      code: 'not_requeued',
      reason: 'the job is action_required, not in progress: its claim ends, the job stays',
      claimAfter: 'ended',
    });
  });

  it('never queues a job whose cancel was asked: its claim ends, the cancel deadline ends the job', () => {
    for (const cancel of ['asked', 'overdue'] as const) {
      const refusal = refused(decideClaimEvent('leaseExpiry', facts('in_progress', 'lapsed', cancel)));
      expect(refusal).toMatchObject({ code: 'not_requeued', claimAfter: 'ended' });
      expect(allowed(decideClaimEvent('cancelDeadline', facts('in_progress', 'none', cancel))).to).toBe(
        'cancelled',
      );
    }
  });
});

describe('delivery cap', () => {
  it('is reached once the leases expired as often as the agent allows', () => {
    expect(deliveryCapReached(2, 3)).toBe(false);
    expect(deliveryCapReached(3, 3)).toBe(true);
    expect(deliveryCapReached(4, 3)).toBe(true);
    expect(deliveryCapMessage(3)).toBe('delivery limit reached after 3 leases');
  });

  it('ends the requeued job failure', () => {
    expect(allowed(decideClaimEvent('deliveryCap', facts('queued', 'none')))).toEqual({
      to: 'failure',
      claimAfter: 'ended',
    });
  });

  it('refuses a job no longer queued (invalid_status_move)', () => {
    expect(refused(decideClaimEvent('deliveryCap', facts('in_progress', 'none')))).toEqual({
      code: 'invalid_status_move',
      reason: 'The job is in_progress, not queued',
      claimAfter: 'kept',
    });
  });

  it('refuses a job whose claim is fenced against the write (stale_claim)', () => {
    expect(refused(decideClaimEvent('deliveryCap', facts('queued', 'stale'))).code).toBe('stale_claim');
  });
});

describe('graceful cancel asked', () => {
  it('asks the agent of an in_progress job held under a lease, its claim shortened, the status kept', () => {
    for (const claim of ['current', 'lapsed'] as const)
      expect(allowed(decideClaimEvent('cancelAsked', facts('in_progress', claim)))).toEqual({
        to: 'in_progress',
        claimAfter: 'shortened',
      });
  });

  it('does not ask for a job no lease holds, or one not in progress: it is cancelled at once', () => {
    expect(refused(decideClaimEvent('cancelAsked', facts('in_progress', 'none')))).toEqual({
      code: 'cancelled_at_once',
      reason: 'no lease holds the job: it is cancelled at once',
      claimAfter: 'kept',
    });
    expect(refused(decideClaimEvent('cancelAsked', facts('action_required', 'current')))).toEqual({
      code: 'cancelled_at_once',
      reason: 'the job is action_required, not in progress: it is cancelled at once',
      claimAfter: 'kept',
    });
    expect(allowed(decideClaimEvent('cancelAtOnce', facts('in_progress', 'none')))).toEqual({
      to: 'cancelled',
      claimAfter: 'ended',
    });
    expect(allowed(decideClaimEvent('cancelAtOnce', facts('action_required', 'current'))).to).toBe(
      'cancelled',
    );
  });

  it('asks only once (asked_to_stop)', () => {
    expect(refused(decideClaimEvent('cancelAsked', facts('in_progress', 'current', 'asked')))).toEqual({
      code: 'asked_to_stop',
      reason: 'its agent was asked to stop it already',
      claimAfter: 'kept',
    });
  });
});

describe('cancel at once', () => {
  it('cancels every job that has not ended and is not asked, its claim ended', () => {
    for (const status of ['pending', 'queued', 'triggered', 'in_progress', 'action_required'] as const)
      expect(allowed(decideClaimEvent('cancelAtOnce', facts(status, 'none')))).toEqual({
        to: 'cancelled',
        claimAfter: 'ended',
      });
    expect(statusInto('cancelAtOnce')).toBe('cancelled');
  });

  it('yields to graceful cancel for a job a lease holds in progress (asked_to_stop)', () => {
    expect(refused(decideClaimEvent('cancelAtOnce', facts('in_progress', 'current')))).toEqual({
      code: 'asked_to_stop',
      reason: 'a lease holds the job in progress: its agent is asked to stop it',
      claimAfter: 'kept',
    });
  });

  it('leaves a job whose agent was asked already (asked_to_stop), and one that has ended', () => {
    expect(refused(decideClaimEvent('cancelAtOnce', facts('action_required', 'none', 'asked'))).code).toBe(
      'asked_to_stop',
    );
    for (const status of TERMINAL_JOB_STATUSES.filter((s) => s !== 'cancelled'))
      expect(refused(decideClaimEvent('cancelAtOnce', facts(status, 'none'))).code).toBe(
        'invalid_status_move',
      );
  });
});

describe('cancel deadline passed', () => {
  it('ends a job asked to cancel cancelled, its claim ended, with the grace message', () => {
    for (const status of ACTIVE_JOB_STATUSES)
      for (const cancel of ['asked', 'overdue'] as const)
        expect(allowed(decideClaimEvent('cancelDeadline', facts(status, 'none', cancel)))).toEqual({
          to: 'cancelled',
          claimAfter: 'ended',
        });
    expect(CLAIM_LIFECYCLE.cancelDeadline.message).toBe(
      'cancelled: the agent did not stop the job within the grace period',
    );
  });

  it('refuses a job whose cancel was not asked (cancel_not_asked), or that has ended', () => {
    expect(refused(decideClaimEvent('cancelDeadline', facts('in_progress', 'none')))).toEqual({
      code: 'cancel_not_asked',
      reason: 'its cancel was not asked',
      claimAfter: 'kept',
    });
    expect(refused(decideClaimEvent('cancelDeadline', facts('successful', 'none', 'overdue'))).code).toBe(
      'invalid_status_move',
    );
  });
});

describe('the facts of a write', () => {
  it('fence a claim id against the claim record', () => {
    const record = { claimId: 'c1', enforce: false };
    expect(fencedClaim(record, 'c1')).toBe('current');
    expect(fencedClaim(record, 'c2')).toBe('stale');
    expect(fencedClaim(undefined, 'c1')).toBe('stale');
    expect(fencedClaim(record, undefined)).toBe('current');
    expect(fencedClaim({ ...record, enforce: true }, undefined)).toBe('stale');
    expect(fencedClaim(undefined, undefined)).toBe('none');
  });

  it("read a job's cancel state from its row", () => {
    expect(cancelStateOf(false, false)).toBe('none');
    expect(cancelStateOf(true, false)).toBe('asked');
    expect(cancelStateOf(true, true)).toBe('overdue');
  });

  it('name one status for the events that move every job into one', () => {
    const into: Partial<Record<ClaimEvent, JobStatus>> = {
      claim: 'in_progress',
      requeue: 'queued',
      leaseExpiry: 'queued',
      deliveryCap: 'failure',
      cancelAtOnce: 'cancelled',
      cancelDeadline: 'cancelled',
    };
    for (const [event, status] of Object.entries(into)) expect(statusInto(event as ClaimEvent)).toBe(status);
    expect(() => statusInto('report')).toThrow(/no one status/);
    expect(() => statusInto('heartbeat')).toThrow(/no one status/);
  });
});
