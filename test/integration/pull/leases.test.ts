import type { EntityManager } from '@mikro-orm/postgresql';
import supertest from 'supertest';
import { expireLapsedClaims } from '../../../engine/jobMoves';
import { workflowIds } from '../../../workflows/ids';
import { eventually } from '../../helpers/eventually';
import { pullFixture, type PullFixture } from '../../helpers/pull';
import { startTestStack, type TestStack } from '../../helpers/stack';
import { workflowTimers } from '../../helpers/timers';

/** The shortest lease an agent may have (domain/jobAgents.ts): the `leased` agent's. */
const LEASE_MS = 5_000;

/**
 * docs/behaviour.md "Pull job agents" under a lease (docs/design.md "Decisions": leases, heartbeat, fencing): a claim under a lease
 * has a claim record and a lease workflow; without heartbeats the job goes back to the queue, with
 * them it stays; a V1 agent's job is never touched.
 */
describe('pull agents under a lease', () => {
  let stack: TestStack;
  let ws: string;
  let leased: PullFixture;
  let fenced: PullFixture;
  let v1: PullFixture;
  let swept: PullFixture;
  let poison: PullFixture;
  let graceful: PullFixture;

  beforeAll(async () => {
    stack = await startTestStack();
    ws = `/v1/workspaces/${stack.workspaceId}`;
    leased = await pullFixture(stack, 'leased', { config: { leaseSeconds: LEASE_MS / 1000 }, resources: 4 });
    fenced = await pullFixture(stack, 'fenced', {
      config: { leaseSeconds: 30, enforceClaimId: true },
      resources: 2,
    });
    v1 = await pullFixture(stack, 'plain', { resources: 1 });
    swept = await pullFixture(stack, 'swept', { config: { leaseSeconds: 5 }, resources: 3 });
    graceful = await pullFixture(stack, 'graceful', {
      config: { leaseSeconds: 30, cancelGraceSeconds: 2 },
      resources: 4,
    });
    poison = await pullFixture(stack, 'poison', {
      config: { leaseSeconds: 5, maxDeliveries: 2 },
      resources: 1,
    });
  });
  afterAll(() => stack.close());

  const claim = async (fixture: PullFixture, jobId: string) => {
    const res = await stack.http
      .post(`${ws}/job-agents/${fixture.agentId}/jobs/${jobId}/claim`)
      .set(stack.auth);
    expect(res.status).toBe(200);
    return res.body as {
      status: string;
      claim_id?: string;
      lease_seconds?: number;
      claim_expires_at?: string;
    };
  };
  const heartbeat = (jobId: string, body: object = {}) =>
    stack.http.post(`${ws}/jobs/${jobId}/heartbeat`).set(stack.auth).send(body);
  const report = (jobId: string, body: object) =>
    stack.http.put(`${ws}/jobs/${jobId}/status`).set(stack.auth).send(body);
  const jobStatus = async (jobId: string): Promise<string> =>
    (await stack.http.get(`${ws}/jobs/${jobId}`).set(stack.auth)).body.status;
  const claimRecords = async (jobId: string) =>
    (stack.orm.em.fork() as EntityManager).execute<{ claim_id: string }[]>(
      'SELECT claim_id FROM job_claim WHERE job_id = ?',
      [jobId],
    );
  /** How long a job's claim has left, by the database's clock (the one heartbeats and sweeps read). */
  const claimRemainingMs = async (jobId: string): Promise<number> => {
    const [row] = await (stack.orm.em.fork() as EntityManager).execute<{ ms: number }[]>(
      'SELECT (extract(epoch FROM claim_expires_at - clock_timestamp()) * 1000)::float8 AS ms FROM job_claim WHERE job_id = ?',
      [jobId],
    );
    return Number(row!.ms);
  };
  // The relay may start the lease workflow a moment after the claim: wait for it to exist and end.
  const leaseOutcome = (jobId: string, claimId: string) =>
    eventually(() => stack.temporal.workflow.getHandle(workflowIds.lease(jobId, claimId)).result(), {
      what: 'the lease workflow to end',
    });

  /**
   * How a lease ended whose claim was ended by a write: `released`, or `never started` when the
   * relay saw its start and its end together and made neither call (worker/outboxRelay.ts).
   */
  const leaseAfterItsClaim = async (jobId: string, claimId: string): Promise<string> => {
    await eventually(
      async () =>
        (
          await (stack.orm.em.fork() as EntityManager).execute(
            `SELECT 1 FROM outbox WHERE kind IN ('lease.start', 'lease.end') AND payload->>'jobId' = ?`,
            [jobId],
          )
        ).length === 0,
      { what: "the relay to take the lease's messages" },
    );
    const handle = stack.temporal.workflow.getHandle(workflowIds.lease(jobId, claimId));
    try {
      await handle.describe();
    } catch {
      return 'never started';
    }
    return handle.result();
  };

  it('returns a claimed job to the queue within 7 s when no heartbeat comes, and drops its claim', async () => {
    const job = leased.jobs[0]!;
    const claimedAt = Date.now();
    const claimed = await claim(leased, job.id);
    expect(claimed).toMatchObject({ status: 'in_progress', lease_seconds: 5, claim_id: expect.any(String) });
    expect(Date.parse(claimed.claim_expires_at!) - claimedAt).toBeGreaterThan(4_000);
    expect(await claimRecords(job.id)).toEqual([{ claim_id: claimed.claim_id }]);

    await eventually(async () => (await jobStatus(job.id)) === 'queued', {
      what: 'the job back in the queue',
      timeoutMs: 7_000 - (Date.now() - claimedAt),
    });
    expect(Date.now() - claimedAt).toBeLessThan(7_000);
    expect(await claimRecords(job.id)).toEqual([]);
    expect(await leaseOutcome(job.id, claimed.claim_id!)).toBe('expired');
    // Heartbeats for the lost claim extend nothing: 409, with the job's status (docs/agents.md "Writing your
    // own agent").
    expect((await heartbeat(job.id, { claim_id: claimed.claim_id })).status).toBe(409);
  });

  it('keeps a heartbeating job in_progress past two lease lengths, each sweep of its lease finding it extended; never touches a V1 job; ends the lease on a terminal status', async () => {
    const SWEEPS = 3;
    const beating = leased.jobs[1]!;
    const silent = leased.jobs[2]!;
    const plain = v1.jobs[0]!;
    const claimedAt = Date.now();
    const claimed = await claim(leased, beating.id);
    await claim(leased, silent.id);
    const plainClaim = await claim(v1, plain.id);
    expect(plainClaim).not.toHaveProperty('claim_id');
    expect(await claimRecords(plain.id)).toEqual([]);
    expect((await heartbeat(plain.id)).status).toBe(409);

    // Heartbeats move the deadline in the database only; the lease's timer fires at the deadline it
    // last read, its sweep finds the claim extended, and it sleeps on to the new deadline
    // (docs/design.md "Lease workflow"). Each round beats with half the lease left, as an agent
    // beating at a third of it (docs/agents.md "The reference agent") would have by then, and waits
    // for that sweep: the rounds take as long as the sweeps do, half a lease each.
    const lease = stack.temporal.workflow.getHandle(workflowIds.lease(beating.id, claimed.claim_id!));
    let deadline = Date.parse(claimed.claim_expires_at!);
    for (let sweep = 1; sweep <= SWEEPS; sweep++) {
      await eventually(async () => (await claimRemainingMs(beating.id)) <= LEASE_MS / 2, {
        what: 'half the lease to pass',
      });
      const beat = await heartbeat(beating.id, { claim_id: claimed.claim_id });
      expect(beat.status).toBe(200);
      expect(beat.body).toMatchObject({
        job_id: beating.id,
        claim_id: claimed.claim_id,
        lease_seconds: LEASE_MS / 1000,
      });
      const extended = Date.parse(beat.body.claim_expires_at);
      expect(extended).toBeGreaterThan(deadline);

      // Its timer fires, and the lease either sleeps on (a timer again) or has ended.
      const swept = await eventually(
        async () => {
          const timers = await workflowTimers(lease);
          const fired = timers.filter((timer) => timer.ended === 'fired');
          const next = timers.find((timer) => !timer.ended);
          const ended = (await lease.describe()).status.name !== 'RUNNING';
          return fired.length === sweep && (next || ended) ? { fired: fired.at(-1)!, next } : undefined;
        },
        { what: `sweep ${sweep} of the lease`, timeoutMs: LEASE_MS * 2 },
      );
      expect(await jobStatus(beating.id)).toBe('in_progress');
      // It fired at the deadline it had read and now waits for the one the heartbeat set (give or
      // take the rounding of the two clocks' milliseconds and the moment the lease took to read it).
      expect(swept.fired.dueAt).toBeGreaterThanOrEqual(deadline - 10);
      expect(swept.next?.dueAt).toBeGreaterThanOrEqual(extended - 10);
      expect(swept.next?.dueAt).toBeLessThan(extended + LEASE_MS / 4);
      deadline = extended;
    }
    expect(Date.now() - claimedAt).toBeGreaterThan(2 * LEASE_MS);
    expect(await claimRecords(beating.id)).toEqual([{ claim_id: claimed.claim_id }]);
    // The sweeps after the silent claim's deadline expired it; the V1 job has no claim for them to take.
    expect(await jobStatus(silent.id)).toBe('queued');
    expect(await claimRecords(silent.id)).toEqual([]);
    expect(await jobStatus(plain.id)).toBe('in_progress');

    const done = await report(beating.id, { status: 'successful', claim_id: claimed.claim_id });
    expect(done.status).toBe(202);
    expect(await claimRecords(beating.id)).toEqual([]);
    expect(await leaseOutcome(beating.id, claimed.claim_id!)).toBe('released');
  });

  it('fences writes with the claim id: a late timer of an old claim never touches the new one', async () => {
    const job = leased.jobs[3]!;
    const first = await claim(leased, job.id);
    await eventually(async () => (await jobStatus(job.id)) === 'queued', {
      what: 'the first claim to expire',
      timeoutMs: 10_000,
    });
    const second = await claim(leased, job.id);
    expect(second.claim_id).not.toBe(first.claim_id);
    // A sweep run late, as the first claim's timer would: nothing of the second claim moves.
    const em = stack.orm.em.fork() as EntityManager;
    expect((await expireLapsedClaims(em)).filter((c) => c.jobId === job.id)).toEqual([]);
    expect(await claimRecords(job.id)).toEqual([{ claim_id: second.claim_id }]);
    expect((await heartbeat(job.id, { claim_id: second.claim_id })).status).toBe(200);
    expect(await jobStatus(job.id)).toBe('in_progress');
    // Without enforcement, a stale claim id is still refused where it is given.
    const stale = await heartbeat(job.id, { claim_id: first.claim_id });
    expect(stale.status).toBe(409);
    expect(stale.body.code).toBe('stale_claim');
    expect((await report(job.id, { status: 'failure', message: 'gave up' })).status).toBe(202);
  });

  it('refuses status and heartbeat writes with a stale or missing claim id under enforceClaimId', async () => {
    const job = fenced.jobs[0]!;
    const first = await claim(fenced, job.id);
    const giveBack = await stack.http
      .post(`${ws}/jobs/${job.id}/requeue`)
      .set(stack.auth)
      .send({ claim_id: first.claim_id });
    expect(giveBack.status).toBe(202);
    expect(await leaseAfterItsClaim(job.id, first.claim_id!)).toMatch(/^(released|never started)$/);
    const current = await claim(fenced, job.id);

    for (const body of [{}, { claim_id: first.claim_id }]) {
      const beat = await heartbeat(job.id, body);
      expect(beat.status).toBe(409);
      expect(beat.body).toMatchObject({ code: 'stale_claim' });
      const write = await report(job.id, { status: 'successful', ...body });
      expect(write.status).toBe(409);
    }
    expect(await jobStatus(job.id)).toBe('in_progress');
    expect((await heartbeat(job.id, { claim_id: current.claim_id })).status).toBe(200);
    expect((await report(job.id, { status: 'successful', claim_id: current.claim_id })).status).toBe(202);
    expect(await jobStatus(job.id)).toBe('successful');
  });

  it('expires every lapsed claim in one sweep, those whose lease workflow never started too', async () => {
    // Claimed while no worker runs; one claim's lease start is then lost, as if its workflow had not started yet.
    await stack.stopWorker();
    const claims = [];
    for (const job of swept.jobs) claims.push({ job, ...(await claim(swept, job.id)) });
    const [timed, ...unstarted] = claims;
    await (stack.orm.em.fork() as EntityManager).execute(
      `DELETE FROM outbox WHERE kind = 'lease.start' AND payload->>'jobId' = ANY(?::text[])`,
      [`{${unstarted.map((c) => c.job.id).join(',')}}`],
    );
    await stack.startWorker();

    // The one lease that runs sweeps them all when its time runs out.
    expect(await leaseOutcome(timed!.job.id, timed!.claim_id!)).toBe('expired');
    for (const { job } of claims) expect(await jobStatus(job.id)).toBe('queued');
    expect(await claimRecords(unstarted[0]!.job.id)).toEqual([]);
    for (const { job, claim_id } of unstarted) {
      await expect(
        stack.temporal.workflow.getHandle(workflowIds.lease(job.id, claim_id!)).describe(),
      ).rejects.toThrow(/not found/i);
    }
  }, 60_000);

  it('ends a job failure once its leases expired as often as its agent allows, and says so in explain and the metrics', async () => {
    const job = poison.jobs[0]!;
    const limits = async () =>
      Number(
        /flightdeck_job_delivery_limits_total (\d+)/.exec(
          (await supertest(stack.app.metricsApp.callback()).get('/metrics').expect(200)).text,
        )?.[1] ?? 0,
      );
    const before = await limits();
    // The first lease expires: back in the queue, as always.
    await claim(poison, job.id);
    await eventually(async () => (await jobStatus(job.id)) === 'queued', {
      what: 'the first lease to expire',
      timeoutMs: 10_000,
    });
    // The second reaches maxDeliveries (2): the job ends, and is handed out no more.
    await claim(poison, job.id);
    await eventually(async () => (await jobStatus(job.id)) === 'failure', {
      what: 'the second lease to expire and end the job',
      timeoutMs: 10_000,
    });
    const ended = (await stack.http.get(`${ws}/jobs/${job.id}`).set(stack.auth)).body as { message: string };
    expect(ended.message).toBe('delivery limit reached after 2 leases');
    const again = await stack.http
      .post(`${ws}/job-agents/${poison.agentId}/jobs/${job.id}/claim`)
      .set(stack.auth);
    expect(again.status).toBe(409);
    expect(await claimRecords(job.id)).toEqual([]);
    expect(await limits()).toBe(before + 1);

    // Its release ends failed, and explain says why.
    const { releaseId, resourceId, environmentId } = (
      await stack.http.get(`${ws}/jobs/${job.id}`).set(stack.auth)
    ).body as { releaseId: string; resourceId: string; environmentId: string };
    await eventually(
      async () =>
        (await stack.http.get(`${ws}/releases/${releaseId}`).set(stack.auth)).body.phase === 'failed',
      { what: 'the release to fail' },
    );
    const explained = await stack.http
      .get(`${ws}/release-targets/${resourceId}-${environmentId}-${poison.deploymentId}/explain`)
      .set(stack.auth);
    expect(explained.body.next).toContain(
      `(its job ${job.id} ended failure: delivery limit reached after 2 leases)`,
    );
  });

  it('ends a cancelled job cancelled at its deadline when its agent does not stop it, heartbeats or not', async () => {
    const job = graceful.jobs[0]!;
    const claimed = await claim(graceful, job.id);
    const askedAt = Date.now();
    await stack.http.post(`${ws}/releases/${job.releaseId}/cancel`).set(stack.auth).expect(202);
    // The agent keeps beating without stopping: the lease goes no further than the deadline.
    const beat = await heartbeat(job.id, { claim_id: claimed.claim_id });
    expect(beat.body).toMatchObject({ cancelRequested: true });
    expect(Date.parse(beat.body.claim_expires_at)).toBeLessThanOrEqual(Date.parse(beat.body.cancelDeadline));
    await eventually(async () => (await jobStatus(job.id)) === 'cancelled', {
      what: 'the job to end at its cancel deadline',
      timeoutMs: 8_000,
    });
    expect(Date.now() - askedAt).toBeGreaterThanOrEqual(1_900);
    const ended = (await stack.http.get(`${ws}/jobs/${job.id}`).set(stack.auth)).body as { message: string };
    expect(ended.message).toBe('cancelled: the agent did not stop the job within the grace period');
    expect(await claimRecords(job.id)).toEqual([]);
    expect((await heartbeat(job.id, { claim_id: claimed.claim_id })).status).toBe(409);
  });

  it('never gives a job whose cancel was asked back to the queue: requeue is refused, and nobody claims it again', async () => {
    const job = graceful.jobs[1]!;
    const claimed = await claim(graceful, job.id);
    await stack.http.post(`${ws}/releases/${job.releaseId}/cancel`).set(stack.auth).expect(202);
    const requeued = await stack.http
      .post(`${ws}/jobs/${job.id}/requeue`)
      .set(stack.auth)
      .send({ claim_id: claimed.claim_id });
    expect([requeued.status, requeued.body.code]).toEqual([409, 'cancel_requested']);
    expect(await jobStatus(job.id)).toBe('in_progress');
    const again = await stack.http
      .post(`${ws}/job-agents/${graceful.agentId}/jobs/${job.id}/claim`)
      .set(stack.auth);
    expect(again.status).toBe(409);
    await eventually(async () => (await jobStatus(job.id)) === 'cancelled', {
      what: 'the job to end at its cancel deadline',
      timeoutMs: 8_000,
    });
    expect((await report(job.id, { status: 'successful', claim_id: claimed.claim_id })).status).toBe(409);
  });

  it('ends a job its agent moved to action_required after the cancel at the deadline', async () => {
    const job = graceful.jobs[2]!;
    const claimed = await claim(graceful, job.id);
    await stack.http.post(`${ws}/releases/${job.releaseId}/cancel`).set(stack.auth).expect(202);
    expect((await report(job.id, { status: 'action_required', claim_id: claimed.claim_id })).status).toBe(
      202,
    );
    await eventually(async () => (await jobStatus(job.id)) === 'cancelled', {
      what: 'the action_required job to end at its cancel deadline',
      timeoutMs: 8_000,
    });
  });

  it('takes only cancelled or failure for a job whose cancel deadline has passed', async () => {
    const job = graceful.jobs[3]!;
    const claimed = await claim(graceful, job.id);
    await stack.http.post(`${ws}/releases/${job.releaseId}/cancel`).set(stack.auth).expect(202);
    // The deadline passed while the claim lives on (as if the reaper had not come yet).
    await (stack.orm.em.fork() as EntityManager).execute(
      `WITH passed AS (UPDATE job SET cancel_deadline = now() - interval '1 second' WHERE id = ?)
       UPDATE job_claim SET claim_expires_at = now() + interval '30 seconds' WHERE job_id = ?`,
      [job.id, job.id],
    );
    const late = await report(job.id, { status: 'successful', claim_id: claimed.claim_id });
    expect([late.status, late.body.code]).toEqual([409, 'cancel_requested']);
    expect((await report(job.id, { status: 'failure', claim_id: claimed.claim_id })).status).toBe(202);
    expect(await jobStatus(job.id)).toBe('failure');
  });
});
