import type { EntityManager } from '@mikro-orm/postgresql';
import { changeJobStatus, expireLapsedClaims } from '../../../engine/jobMoves';
import { pullFixture, type PullFixture } from '../../helpers/pull';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * A claim id, whenever one is given, must be the job's current claim, even for an agent that does not enforce
 * claim ids (docs/design.md "Decisions": fencing); a cancelled job's agent is asked to stop it, and once it
 * reports `cancelled` the claim is gone, so its next heartbeat answers 409 with its status; once a final
 * report ended the claim, every claim id is stale, even one repeating that status (docs/agents.md "Writing
 * your own agent"); a status report and a lease expiry racing each other never deadlock and never both win.
 */
describe('pull agents, fencing of stale claims', () => {
  let stack: TestStack;
  let ws: string;
  let agent: PullFixture;

  beforeAll(async () => {
    stack = await startTestStack();
    ws = `/v1/workspaces/${stack.workspaceId}`;
    agent = await pullFixture(stack, 'fencing', { config: { leaseSeconds: 30 }, resources: 14 });
  });
  afterAll(() => stack.close());

  const claim = async (jobId: string): Promise<string> => {
    const res = await stack.http
      .post(`${ws}/job-agents/${agent.agentId}/jobs/${jobId}/claim`)
      .set(stack.auth);
    expect(res.status).toBe(200);
    return res.body.claim_id as string;
  };
  const em = () => stack.orm.em.fork() as EntityManager;
  const jobStatus = async (jobId: string): Promise<string> =>
    (await stack.http.get(`${ws}/jobs/${jobId}`).set(stack.auth)).body.status;

  it('refuses a report, a requeue and a heartbeat that carry an old claim id', async () => {
    const job = agent.jobs[0]!;
    const first = await claim(job.id);
    const requeued = await stack.http
      .post(`${ws}/jobs/${job.id}/requeue`)
      .set(stack.auth)
      .send({ claim_id: first });
    expect(requeued.status).toBe(202);
    const second = await claim(job.id);

    const answers = [
      await stack.http.put(`${ws}/jobs/${job.id}/status`).set(stack.auth).send({
        status: 'successful',
        claim_id: first,
      }),
      await stack.http.post(`${ws}/jobs/${job.id}/requeue`).set(stack.auth).send({ claim_id: first }),
      await stack.http.post(`${ws}/jobs/${job.id}/heartbeat`).set(stack.auth).send({ claim_id: first }),
    ];
    for (const res of answers) {
      expect(res.status).toBe(409);
      expect(res.body.code).toBe('stale_claim');
    }
    expect(await jobStatus(job.id)).toBe('in_progress');
    const current = await stack.http
      .post(`${ws}/jobs/${job.id}/heartbeat`)
      .set(stack.auth)
      .send({ claim_id: second });
    expect(current.status).toBe(200);
  });

  it('refuses every claim id once the final report ended the claim, even repeating the final status', async () => {
    const job = agent.jobs[13]!;
    const older = await claim(job.id);
    await stack.http
      .post(`${ws}/jobs/${job.id}/requeue`)
      .set(stack.auth)
      .send({ claim_id: older })
      .expect(202);
    const current = await claim(job.id);
    const report = (claimId: string, status = 'successful') =>
      stack.http
        .put(`${ws}/jobs/${job.id}/status`)
        .set(stack.auth)
        .send({ status, message: 'done', claim_id: claimId });
    const first = await report(current);
    expect(first.status).toBe(202);
    const before = await stack.http.get(`${ws}/jobs/${job.id}`).set(stack.auth);
    for (const [claimId, status] of [
      [older, 'successful'],
      [current, 'successful'],
      ['0190aaaa-0000-7000-8000-00000000dead', 'successful'],
      [current, 'failure'],
    ] as const) {
      const stale = await report(claimId, status);
      expect({ claimId, status, answer: stale.status, code: stale.body.code }).toEqual({
        claimId,
        status,
        answer: 409,
        code: 'stale_claim',
      });
      expect(stale.body.detail).toContain('successful');
    }
    const after = await stack.http.get(`${ws}/jobs/${job.id}`).set(stack.auth);
    expect(after.body).toEqual(before.body);
  });

  it("asks a claimed job's agent to stop it on cancel; its cancelled report ends the claim, and the next heartbeat answers 409", async () => {
    const job = agent.jobs[1]!;
    const claimId = await claim(job.id);
    const cancelled = await stack.http.post(`${ws}/releases/${job.releaseId}/cancel`).set(stack.auth);
    expect(cancelled.status).toBe(202);
    // Graceful: the claim lives on, heartbeats and polls say the cancel was asked, with its deadline.
    const beat = await stack.http
      .post(`${ws}/jobs/${job.id}/heartbeat`)
      .set(stack.auth)
      .send({ claim_id: claimId });
    expect(beat.status).toBe(200);
    expect(beat.body).toMatchObject({ cancelRequested: true, cancelDeadline: expect.any(String) });
    const deadline = Date.parse(beat.body.cancelDeadline);
    expect(deadline - Date.now()).toBeGreaterThan(50_000);
    expect(Date.parse(beat.body.claim_expires_at)).toBeLessThanOrEqual(deadline);
    const polled = await stack.http
      .get(`${ws}/job-agents/${agent.agentId}/jobs?status=in_progress`)
      .set(stack.auth);
    expect(polled.body.items.find((item: { id: string }) => item.id === job.id)).toMatchObject({
      cancelRequested: true,
      cancelDeadline: beat.body.cancelDeadline,
    });
    const reported = await stack.http
      .put(`${ws}/jobs/${job.id}/status`)
      .set(stack.auth)
      .send({ status: 'cancelled', claim_id: claimId });
    expect(reported.status).toBe(202);
    expect(await em().execute('SELECT 1 FROM job_claim WHERE job_id = ?', [job.id])).toEqual([]);
    for (const body of [{ claim_id: claimId }, {}]) {
      const after = await stack.http.post(`${ws}/jobs/${job.id}/heartbeat`).set(stack.auth).send(body);
      expect(after.status).toBe(409);
      expect(after.body.detail).toContain('cancelled');
    }
  });

  it('lets a report and an expiry race without a deadlock, and exactly one of them wins', async () => {
    for (const job of agent.jobs.slice(2, 13)) {
      const claimId = await claim(job.id);
      await em().execute(
        `UPDATE job_claim SET claim_expires_at = now() - interval '1 second' WHERE job_id = ?`,
        [job.id],
      );
      const [reported, expired] = await Promise.allSettled([
        changeJobStatus(em(), { workspaceId: stack.workspaceId }, job.id, { status: 'successful', claimId }),
        expireLapsedClaims(em()).then((expired) =>
          expired.some((c) => c.jobId === job.id && c.claimId === claimId),
        ),
      ]);
      expect(expired.status).toBe('fulfilled');
      const expiryWon = expired.status === 'fulfilled' && expired.value;
      if (expiryWon) {
        expect(reported).toMatchObject({ status: 'rejected', reason: { code: 'stale_claim' } });
        expect(await jobStatus(job.id)).toBe('queued');
      } else {
        expect(reported.status).toBe('fulfilled');
        expect(await jobStatus(job.id)).toBe('successful');
      }
    }
  });
});
