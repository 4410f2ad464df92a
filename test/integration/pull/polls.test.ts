import type { EntityManager } from '@mikro-orm/postgresql';
import { POLL_COUNT_AHEAD } from '../../../engine/jobMoves';
import { pullFixture, type PullFixture } from '../../helpers/pull';
import { startTestStack, type TestStack } from '../../helpers/stack';

const QUEUED = 1_500;

/**
 * A poll's cost does not grow with the queue (docs/agents.md "Writing your own agent"). Its page comes from
 * the queue's index, and its total is exact when the page is not full, else counted at most POLL_COUNT_AHEAD
 * past it.
 */
describe('polls over a long queue', () => {
  let stack: TestStack;
  let fixture: PullFixture;
  let ws: string;

  beforeAll(async () => {
    stack = await startTestStack();
    ws = `/v1/workspaces/${stack.workspaceId}`;
    fixture = await pullFixture(stack, 'long', { resources: 1 });
    // Copies of the one real queued job (distinct agent entries keep one active job per entry).
    await (stack.orm.em.fork() as EntityManager).execute(
      `INSERT INTO job (id, workspace_id, release_id, deployment_id, environment_id, resource_id, job_agent_id,
                        agent_type, agent_entry, status, job_agent_config, dispatch_context, created_at)
       SELECT gen_random_uuid(), workspace_id, release_id, deployment_id, environment_id, resource_id,
              job_agent_id, agent_type, 1000 + n, 'queued', job_agent_config, dispatch_context,
              created_at + n * interval '1 millisecond'
         FROM job, generate_series(1, ?::int) AS n
        WHERE id = ?`,
      [QUEUED - 1, fixture.jobs[0]!.id],
    );
  });
  afterAll(() => stack.close());

  const poll = (query: string) =>
    stack.http.get(`${ws}/job-agents/${fixture.agentId}/jobs?status=queued&${query}`).set(stack.auth);

  it('answers a full page counted up to 100 past it with totalAtLeast, never a bound as its total', async () => {
    expect(POLL_COUNT_AHEAD).toBe(100);
    const first = await poll('limit=100');
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ totalAtLeast: 200, limit: 100, offset: 0 });
    expect(first.body).not.toHaveProperty('total');
    expect(first.body.items).toHaveLength(100);
    expect(first.body.items[0].id).toBe(fixture.jobs[0]!.id);
    const created = first.body.items.map((job: { createdAt: string }) => job.createdAt);
    expect([...created].sort()).toEqual(created);
  });

  it('counts exactly near the end of the queue, and when the page is not full', async () => {
    const near = await poll('limit=100&offset=1350');
    expect(near.body).toMatchObject({ total: QUEUED, limit: 100, offset: 1_350 });
    expect(near.body).not.toHaveProperty('totalAtLeast');
    const last = await poll('limit=100&offset=1450');
    expect(last.body).toMatchObject({ total: QUEUED });
    expect(last.body.items).toHaveLength(50);
    const past = await poll('limit=100&offset=5000');
    expect(past.body).toMatchObject({ total: QUEUED, items: [] });
  });
});
