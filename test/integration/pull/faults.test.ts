import path from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import { WorkflowNotFoundError } from '@temporalio/client';
import { ApiClient } from '../../../cli/apiClient';
import { workflowIds } from '../../../workflows/ids';
import { eventually } from '../../helpers/eventually';
import { exited, freePort, spawnScript } from '../../helpers/processes';
import { pullFixture } from '../../helpers/pull';
import { startTestStack, type TestStack } from '../../helpers/stack';

/** The API with its stores wrapped in a fault (test/helpers/faultyApi.ts). */
const FAULTY_API = path.join(__dirname, '..', '..', 'helpers', 'faultyApi.ts');

/**
 * docs/design.md "Invariants" 5: a claim is one statement that writes the job, the claim record and
 * the outbox row that starts its lease workflow. Whatever dies, wherever, a committed claim record
 * gets its lease workflow and an uncommitted claim leaves nothing behind.
 */
describe('pull agents, faults between the claim steps', () => {
  const claimRows = (stack: TestStack, jobId: string) =>
    (stack.orm.em.fork() as EntityManager).execute<{ claim_id: string }[]>(
      'SELECT claim_id FROM job_claim WHERE job_id = ?',
      [jobId],
    );
  const leaseOutbox = (stack: TestStack, jobId: string) =>
    (stack.orm.em.fork() as EntityManager).execute<{ id: string }[]>(
      "SELECT id FROM outbox WHERE kind = 'lease.start' AND payload->>'jobId' = ?",
      [jobId],
    );
  const jobRow = async (stack: TestStack, jobId: string) =>
    (
      await (stack.orm.em.fork() as EntityManager).execute<{ status: string; started_at: Date | null }[]>(
        'SELECT status, started_at FROM job WHERE id = ?',
        [jobId],
      )
    )[0]!;
  const leaseExists = async (stack: TestStack, jobId: string, claimId: string) => {
    try {
      await stack.temporal.workflow.getHandle(workflowIds.lease(jobId, claimId)).describe();
      return true;
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return false;
      throw error;
    }
  };

  describe('a claim that fails after it moved the job', () => {
    let stack: TestStack;
    beforeAll(async () => {
      stack = await startTestStack();
      // The fault is the database's: writing the claim record fails, within the statement that moved the job.
      await (stack.orm.em.fork() as EntityManager).execute(
        `CREATE FUNCTION refuse_claim() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN RAISE EXCEPTION 'injected: the claim record cannot be written'; END $$;
         CREATE TRIGGER refuse_claim BEFORE INSERT ON job_claim FOR EACH ROW EXECUTE FUNCTION refuse_claim();`,
      );
    });
    afterAll(() => stack.close());

    it('answers 500 and leaves the job queued, with no claim record and no lease to start', async () => {
      const fixture = await pullFixture(stack, 'failing', { config: { leaseSeconds: 5 } });
      const job = fixture.jobs[0]!;
      const res = await stack.http
        .post(`/v1/workspaces/${stack.workspaceId}/job-agents/${fixture.agentId}/jobs/${job.id}/claim`)
        .set(stack.auth);
      expect(res.status).toBe(500);
      expect(res.headers['content-type']).toContain('application/problem+json');
      expect(await jobRow(stack, job.id)).toEqual({ status: 'queued', started_at: null });
      expect(await claimRows(stack, job.id)).toEqual([]);
      expect(await leaseOutbox(stack, job.id)).toEqual([]);
    });
  });

  describe('a claim committed while nothing runs lease workflows', () => {
    let stack: TestStack;
    beforeAll(async () => {
      stack = await startTestStack();
    });
    afterAll(() => stack.close());

    it('starts the lease workflow once a worker is back, and the lease still expires', async () => {
      const fixture = await pullFixture(stack, 'orphan', { config: { leaseSeconds: 5 } });
      const job = fixture.jobs[0]!;
      await stack.stopWorker();
      const res = await stack.http
        .post(`/v1/workspaces/${stack.workspaceId}/job-agents/${fixture.agentId}/jobs/${job.id}/claim`)
        .set(stack.auth);
      expect(res.status).toBe(200);
      const claimId = res.body.claim_id as string;
      expect(await claimRows(stack, job.id)).toEqual([{ claim_id: claimId }]);
      expect(await leaseOutbox(stack, job.id)).toHaveLength(1);
      expect(await leaseExists(stack, job.id, claimId)).toBe(false);

      await stack.startWorker();
      await eventually(() => leaseExists(stack, job.id, claimId), { what: 'the lease workflow' });
      await eventually(async () => (await jobRow(stack, job.id)).status === 'queued', {
        what: 'the lease to expire',
        timeoutMs: 15_000,
      });
      expect(await claimRows(stack, job.id)).toEqual([]);
    });
  });

  describe('an API process killed right after the claim committed', () => {
    let stack: TestStack;
    beforeAll(async () => {
      stack = await startTestStack();
    });
    afterAll(() => stack.close());

    it('leaves a claim record that gets its lease workflow, which returns the job to the queue', async () => {
      const fixture = await pullFixture(stack, 'killed', { config: { leaseSeconds: 5 } });
      const job = fixture.jobs[0]!;
      const port = await freePort();
      const api = spawnScript(stack, FAULTY_API, ['claim.exit-after-commit'], {
        env: { FLIGHTDECK_PORT: String(port) },
      });
      const client = new ApiClient({ apiUrl: `http://127.0.0.1:${port}`, apiKey: stack.apiKey });
      try {
        await eventually(async () => (await client.request('GET', '/healthz')).status === 200, {
          what: 'the API process to listen',
          timeoutMs: 30_000,
        });
        await expect(
          client.request(
            'POST',
            `/v1/workspaces/${stack.workspaceId}/job-agents/${fixture.agentId}/jobs/${job.id}/claim`,
          ),
        ).rejects.toThrow();
        await exited(api);
        expect(api.signalCode).toBe('SIGKILL');

        const [claim] = await claimRows(stack, job.id);
        expect(claim).toBeDefined();
        expect((await jobRow(stack, job.id)).status).toBe('in_progress');
        await eventually(() => leaseExists(stack, job.id, claim!.claim_id), { what: 'the lease workflow' });
        await eventually(async () => (await jobRow(stack, job.id)).status === 'queued', {
          what: 'the orphaned claim to expire',
          timeoutMs: 15_000,
        });
        expect(await claimRows(stack, job.id)).toEqual([]);
      } finally {
        client.close();
        if (api.exitCode === null && api.signalCode === null) api.kill('SIGKILL');
      }
    }, 90_000);
  });
});
