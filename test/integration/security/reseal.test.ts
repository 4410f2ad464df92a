import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { followLegacySealRetirement } from '../../../db/legacySeals';
import { resealLegacyValues } from '../../../db/reseal';
import { SecretBox } from '../../../db/secrets';
import { jobSecrets } from '../../../db/sensitiveValues';
import { eventually } from '../../helpers/eventually';
import { legacySeal } from '../../helpers/legacySeal';
import { pullFixture, type PullFixture } from '../../helpers/pull';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * Values sealed before binding (`fd1:`) are rewritten by `flightdeck admin reseal` bound to their workspace
 * and owner (`fd2:`), in every table that holds them; a plain string that only looks sealed stays; the job
 * still hands out the same secrets. A run that leaves nothing to rewrite retires legacy values, and from then
 * on none opens, in a process that was running (within its check interval) or one that starts; later runs
 * bind nothing (docs/security.md "Encryption").
 */
describe('admin reseal', () => {
  let stack: TestStack;
  let agent: PullFixture;
  const variableId = randomUUID();
  let variableSetId: string;
  let following: { stop(): void };

  beforeAll(async () => {
    stack = await startTestStack();
    // What the API and worker processes do from start (cli/commands/api.ts, worker.ts), with a short interval.
    following = await followLegacySealRetirement(stack.orm, stack.secrets, { intervalMs: 100 });
    agent = await pullFixture(stack, 'reseal', { config: { leaseSeconds: 30 }, resources: 2 });
    await stack.http
      .put(`/v1/workspaces/${stack.workspaceId}/deployments/${agent.deploymentId}/variables/${variableId}`)
      .set(stack.auth)
      .send({ key: 'DB_PASSWORD', defaultValue: 'bound already', sensitive: true })
      .expect(202);
    const set = await stack.http
      .post(`/v1/workspaces/${stack.workspaceId}/variable-sets`)
      .set(stack.auth)
      .send({
        name: 'shared',
        selector: 'false',
        variables: [{ key: 'API_TOKEN', value: 'x', sensitive: true }],
      })
      .expect(201);
    variableSetId = set.body.id;
  });
  afterAll(() => {
    following.stop();
    return stack.close();
  });

  const em = () => stack.orm.em.fork() as EntityManager;
  const legacy = (value: unknown) => legacySeal(stack.secrets, JSON.stringify(value));

  it('rewrites every legacy value bound to its owner, leaves look-alikes, and is idempotent', async () => {
    const job = agent.jobs[0]!;
    await em().execute(`UPDATE job_agent SET config = config || ?::jsonb WHERE id = ?`, [
      JSON.stringify({ token: legacySeal(stack.secrets, 'agent-token') }),
      agent.agentId,
    ]);
    await em().execute(`UPDATE deployment_variable SET default_value = ?::jsonb WHERE id = ?`, [
      JSON.stringify(legacy('db-password')),
      variableId,
    ]);
    await em().execute(`UPDATE variable_set_variable SET value = ?::jsonb WHERE variable_set_id = ?`, [
      JSON.stringify(legacy('set-token')),
      variableSetId,
    ]);
    await em().execute(`UPDATE job SET job_agent_config = job_agent_config || ?::jsonb WHERE id = ?`, [
      JSON.stringify({ old: { $sealed: legacy('job secret') }, plain: 'fd1:not-a-secret' }),
      job.id,
    ]);

    expect(stack.secrets.refusesLegacy).toBe(false);
    const outcome = await resealLegacyValues(em(), stack.secrets);
    expect(outcome).toMatchObject({ rowsLeft: 0, retiredBefore: false, retiredAt: expect.any(Date) });
    const resealed = Object.fromEntries(outcome.tables.map((report) => [report.table, report.values]));
    expect(resealed).toMatchObject({
      job_agent: 1,
      deployment_variable: 1,
      variable_set_variable: 1,
      job: 1,
      policy: 0,
    });

    const [agentRow] = await em().execute<{ config: { token: string } }[]>(
      'SELECT config FROM job_agent WHERE id = ?',
      [agent.agentId],
    );
    expect(agentRow!.config.token).toMatch(/^fd2:/);
    expect(
      stack.secrets.forRecord(stack.workspaceId, 'job_agent', agent.agentId).open(agentRow!.config.token),
    ).toBe('agent-token');
    const [variable] = await em().execute<{ default_value: string }[]>(
      'SELECT default_value FROM deployment_variable WHERE id = ?',
      [variableId],
    );
    expect(variable!.default_value).toMatch(/^fd2:/);
    const deploymentSecrets = stack.secrets.forRecord(stack.workspaceId, 'deployment', agent.deploymentId);
    expect(deploymentSecrets.openJson(variable!.default_value)).toBe('db-password');
    const [setVariable] = await em().execute<{ value: string }[]>(
      'SELECT value FROM variable_set_variable WHERE variable_set_id = ?',
      [variableSetId],
    );
    expect(setVariable!.value).toMatch(/^fd2:/);
    expect(
      stack.secrets.forRecord(stack.workspaceId, 'variable_set', variableSetId).openJson(setVariable!.value),
    ).toBe('set-token');
    const [jobRow] = await em().execute<{ job_agent_config: { old: { $sealed: string }; plain: string } }[]>(
      'SELECT job_agent_config FROM job WHERE id = ?',
      [job.id],
    );
    expect(SecretBox.isLegacy(jobRow!.job_agent_config.old.$sealed)).toBe(false);
    expect(jobRow!.job_agent_config.plain).toBe('fd1:not-a-secret');
    const snapshotSecrets = jobSecrets(stack.secrets, {
      workspaceId: stack.workspaceId,
      releaseId: job.releaseId,
    });
    expect(snapshotSecrets.openJson(jobRow!.job_agent_config.old.$sealed)).toBe('job secret');

    const again = await resealLegacyValues(em(), stack.secrets);
    expect(again).toEqual({ tables: [], rowsLeft: 0, retiredAt: outcome.retiredAt, retiredBefore: true });
    await eventually(() => stack.secrets.refusesLegacy, { what: 'the running process to refuse fd1:' });

    const claimed = await stack.http
      .post(`/v1/workspaces/${stack.workspaceId}/job-agents/${agent.agentId}/jobs/${job.id}/claim`)
      .set(stack.auth);
    expect(claimed.status).toBe(200);
    expect(claimed.body.jobAgentConfig).toMatchObject({ old: 'job secret', plain: 'fd1:not-a-secret' });
  });

  it('once retired, opens no legacy value, not even one copied in afterwards, and binds none', async () => {
    const job = agent.jobs[1]!;
    const planted = legacy('copied from elsewhere');
    await em().execute(`UPDATE job SET job_agent_config = job_agent_config || ?::jsonb WHERE id = ?`, [
      JSON.stringify({ old: { $sealed: planted } }),
      job.id,
    ]);
    const claimed = await stack.http
      .post(`/v1/workspaces/${stack.workspaceId}/job-agents/${agent.agentId}/jobs/${job.id}/claim`)
      .set(stack.auth);
    expect(claimed.status).toBe(409);
    expect(claimed.body.code).toBe('sealed_value_unreadable');
    expect(claimed.body.detail).toContain('fd1:');
    const [row] = await em().execute<{ status: string }[]>('SELECT status FROM job WHERE id = ?', [job.id]);
    expect(row!.status).toBe('queued');

    expect((await resealLegacyValues(em(), stack.secrets)).retiredBefore).toBe(true);
    const [kept] = await em().execute<{ job_agent_config: { old: { $sealed: string } } }[]>(
      'SELECT job_agent_config FROM job WHERE id = ?',
      [job.id],
    );
    expect(kept!.job_agent_config.old.$sealed).toBe(planted);

    // A process that starts now refuses them from its first request.
    const fresh = SecretBox.fromString(stack.secretKey);
    (await followLegacySealRetirement(stack.orm, fresh)).stop();
    expect(fresh.refusesLegacy).toBe(true);
    expect(() => fresh.forRecord(stack.workspaceId, 'release', job.releaseId).open(planted)).toThrow(
      /retired/,
    );
  });
});
