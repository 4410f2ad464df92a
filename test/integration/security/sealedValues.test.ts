import type { EntityManager } from '@mikro-orm/postgresql';
import { SecretBox } from '../../../db/secrets';
import { jobSecrets } from '../../../db/sensitiveValues';
import { legacySeal } from '../../helpers/legacySeal';
import { pullFixture, type PullFixture } from '../../helpers/pull';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * The sealed-value marker is refused in every request (docs/security.md "Encryption"), so nobody can
 * plant a ciphertext for a claim to decrypt; each ciphertext is bound to its workspace and record, so one
 * copied into another job (from another workspace, or another release of the same one) does not open even
 * under the server's own key; a stored secret that does not open never makes a claim answer 500 nor leaves
 * its job claimed: the claim answers 409 and the job stays queued.
 */
describe('sealed values', () => {
  let stack: TestStack;
  let agent: PullFixture;
  const otherKey = new SecretBox(Buffer.alloc(32, 7));
  const planted = {
    $sealed: otherKey.forRecord('01a21103-0000-7000-8000-000000000009', 'release', 'r').sealJson('secret'),
  };

  beforeAll(async () => {
    stack = await startTestStack();
    agent = await pullFixture(stack, 'sealed', { config: { leaseSeconds: 30 }, resources: 2 });
  });
  afterAll(() => stack.close());

  const em = () => stack.orm.em.fork() as EntityManager;
  const ws = () => `/v1/workspaces/${stack.workspaceId}`;

  it('refuses the marker anywhere in a request body, and stores nothing', async () => {
    const attempts = [
      stack.http
        .post(`${ws()}/deployments/${agent.deploymentId}/versions`)
        .send({ tag: 'planted', jobAgentConfig: { nested: { deep: planted } } }),
      stack.http
        .put(`${ws()}/resources/identifier/planted-node`)
        .send({ name: 'planted', version: 'v1', kind: 'k', config: { list: [planted] } }),
    ];
    for (const attempt of attempts) {
      const res = await attempt.set(stack.auth);
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(JSON.stringify(res.body)).toContain('$sealed');
    }
    const [versions] = await em().execute<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM deployment_version WHERE tag = 'planted'`,
    );
    expect(versions!.n).toBe(0);
    const [resources] = await em().execute<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM resource WHERE identifier = 'planted-node'`,
    );
    expect(resources!.n).toBe(0);
  });

  it('answers 409 for a claim whose secrets do not open, and leaves the job queued and unclaimed', async () => {
    const job = agent.jobs[0]!;
    expect(agent.jobs[1]!.releaseId).not.toBe(job.releaseId);
    const [stored] = await em().execute<{ job_agent_config: object }[]>(
      'SELECT job_agent_config FROM job WHERE id = ?',
      [job.id],
    );
    const [job0, job1] = [agent.jobs[0]!, agent.jobs[1]!];
    const bound = (workspaceId: string, releaseId: string) => ({
      $sealed: jobSecrets(stack.secrets, { workspaceId, releaseId }).sealJson('copied secret'),
    });
    const anotherWorkspace = '01a21103-0000-7000-8000-00000000beef';
    for (const broken of [
      planted,
      bound(anotherWorkspace, job0.releaseId),
      bound(stack.workspaceId, job1.releaseId),
      { $sealed: 'fd1:AAAA' },
      { $sealed: 'fd2:!!not base64!!' },
    ]) {
      await em().execute(`UPDATE job SET job_agent_config = job_agent_config || ?::jsonb WHERE id = ?`, [
        JSON.stringify({ broken }),
        job.id,
      ]);
      const res = await stack.http
        .post(`${ws()}/job-agents/${agent.agentId}/jobs/${job.id}/claim`)
        .set(stack.auth);
      expect(res.status).toBe(409);
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(res.body.code).toBe('sealed_value_unreadable');
      const [row] = await em().execute<{ status: string; claims: number }[]>(
        `SELECT status, (SELECT count(*)::int FROM job_claim WHERE job_id = j.id) AS claims FROM job j WHERE id = ?`,
        [job.id],
      );
      expect(row).toEqual({ status: 'queued', claims: 0 });
    }
    await em().execute('UPDATE job SET job_agent_config = ?::jsonb WHERE id = ?', [
      JSON.stringify(stored!.job_agent_config),
      job.id,
    ]);
    const claimed = await stack.http
      .post(`${ws()}/job-agents/${agent.agentId}/jobs/${job.id}/claim`)
      .set(stack.auth);
    expect(claimed.status).toBe(200);
  });

  it("opens a value bound to the job's own release, and one sealed before binding", async () => {
    const job = agent.jobs[1]!;
    const legacy = legacySeal(stack.secrets, JSON.stringify('legacy secret'));
    const own = jobSecrets(stack.secrets, { workspaceId: stack.workspaceId, releaseId: job.releaseId });
    await em().execute(`UPDATE job SET job_agent_config = job_agent_config || ?::jsonb WHERE id = ?`, [
      JSON.stringify({ own: { $sealed: own.sealJson('own secret') }, legacy: { $sealed: legacy } }),
      job.id,
    ]);
    const claimed = await stack.http
      .post(`${ws()}/job-agents/${agent.agentId}/jobs/${job.id}/claim`)
      .set(stack.auth);
    expect(claimed.status).toBe(200);
    expect(claimed.body.jobAgentConfig).toMatchObject({ own: 'own secret', legacy: 'legacy secret' });
  });
});
