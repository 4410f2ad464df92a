import { randomUUID } from 'node:crypto';
import { recordsApi } from '../../helpers/orchestration';
import { expectFieldError, expectNothingWritten } from '../../helpers/records';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * A variable reference never reads a secret (docs/security.md "Credential binding"). A reference into
 * the job agent configurations of a deployment or a version (where credentials are stored) is refused when it
 * is written, for deployment variables and variable sets alike; one stored before resolves to nothing,
 * so the secret reaches neither the variables preview nor a job.
 */
describe('variable references never read secrets', () => {
  let stack: TestStack;
  const SECRET = 'entry-token-never-referenced-5d1e';

  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(() => stack.close());

  const sql = <T extends object>(query: string, params: unknown[] = []) =>
    stack.orm.em.fork().getConnection().execute<T[]>(query, params);

  it('refuses a reference into an agent configuration when it is written, and stores nothing', async () => {
    const api = recordsApi(stack);
    const deploymentId = (
      await api.send('post', '/deployments', { name: 'refs-write', slug: 'refs-write' }, [202])
    ).id;
    const variableId = randomUUID();
    await api.send('put', `/deployments/${deploymentId}/variables/${variableId}`, { key: 'TOKEN' }, [202]);
    const valuePath = `${api.ws}/deployments/${deploymentId}/variables/${variableId}/values/${randomUUID()}`;
    const tables = ['deployment_variable_value', 'variable_set', 'variable_set_variable'];
    const refused: [object, string, string][] = [
      [
        { referenceValue: { reference: 'deployment', path: ['jobAgents', '0', 'config', 'token'] } },
        'body.referenceValue.path',
        'deployment.jobAgents',
      ],
      [
        { reference_value: { reference: 'deployment', path: ['jobAgentConfig', 'api_key'] } },
        'body.reference_value.path',
        'deployment.jobAgentConfig',
      ],
      [
        { referenceValue: { reference: 'version', path: ['jobAgentConfig', 'token'] } },
        'body.referenceValue.path',
        'version.jobAgentConfig',
      ],
    ];
    for (const [body, path, field] of refused) {
      const res = await expectNothingWritten(stack, tables, () =>
        stack.http.put(valuePath).set(stack.auth).send(body),
      );
      expectFieldError(res, path, `${field} holds job agent configurations`);
    }
    const set = await expectNothingWritten(stack, tables, () =>
      stack.http
        .post(`${api.ws}/variable-sets`)
        .set(stack.auth)
        .send({
          name: 'refs-set',
          selector: 'true',
          variables: [
            { key: 'TOKEN', value: { reference: 'deployment', path: ['jobAgents', '0', 'config', 'token'] } },
          ],
        }),
    );
    expect(set.status).toBe(400);
    expect(JSON.stringify(set.body.errors)).toContain('deployment.jobAgents holds job agent configurations');

    // A reference to the same records' other fields is taken.
    await api.send(
      'put',
      valuePath.slice(api.ws.length),
      { referenceValue: { reference: 'deployment', path: ['slug'] } },
      [202],
    );
  });

  it('resolves a reference into a secret stored before to nothing: not in the preview, not in the job', async () => {
    const api = recordsApi(stack);
    const agentId = await api.agent('refs-puller', 'http-pull');
    const system = await api.system('Refs');
    const environmentId = await api.environment('env-refs', 'resource.metadata["lane"] == "refs"', system);
    const deploymentId = await api.deployment('svc-refs', system, {
      jobAgents: [{ ref: 'refs-puller', config: { token: SECRET } }],
    });
    const resourceId = await api.resource('refs-node', 'service', { lane: 'refs' });
    const referring = async (key: string, path: string[]) => {
      const variableId = randomUUID();
      const valueId = randomUUID();
      await api.send('put', `/deployments/${deploymentId}/variables/${variableId}`, { key }, [202]);
      await api.send(
        'put',
        `/deployments/${deploymentId}/variables/${variableId}/values/${valueId}`,
        { referenceValue: { reference: 'deployment', path } },
        [202],
      );
      return valueId;
    };
    await referring('SLUG', ['slug']);
    const leaking = await referring('ENTRY_TOKEN', ['slug']);
    const setId = (
      await api.send(
        'post',
        '/variable-sets',
        {
          name: 'refs-leaking-set',
          selector: 'deployment.slug == "svc-refs"',
          variables: [{ key: 'SET_TOKEN', value: { reference: 'deployment', path: ['slug'] } }],
        },
        [201],
      )
    ).id;
    // As if written before references were checked: both now lead into the entry's sealed token.
    const intoSecret = JSON.stringify({
      reference: 'deployment',
      path: ['jobAgents', '0', 'config', 'token'],
    });
    await sql('UPDATE deployment_variable_value SET reference = ?::jsonb WHERE id = ?', [
      intoSecret,
      leaking,
    ]);
    await sql('UPDATE variable_set_variable SET reference = ?::jsonb WHERE variable_set_id = ?', [
      intoSecret,
      setId,
    ]);

    await api.version(deploymentId, '1.0.0');
    const preview = await api.get<{ variables: { key: string; value: unknown }[] }>(
      `/release-targets/${resourceId}-${environmentId}-${deploymentId}/variables`,
    );
    expect(JSON.stringify(preview)).not.toContain(SECRET);
    expect(preview.variables.map((variable) => [variable.key, variable.value])).toEqual([
      ['SLUG', 'svc-refs'],
    ]);

    const [job] = await api.jobsSettleAt(1, `&status=queued&jobAgentId=${agentId}`, 'the queued job');
    const shown = await api.get<{ dispatchContext: { variables: Record<string, unknown> } }>(
      `/jobs/${job!.id}`,
    );
    expect(JSON.stringify(shown)).not.toContain(SECRET);
    expect(shown.dispatchContext.variables).toEqual({ SLUG: 'svc-refs' });
    // The agent the entry names still gets the entry's token, as its configuration.
    const claimed = await stack.http
      .post(`${api.ws}/job-agents/${agentId}/jobs/${job!.id}/claim`)
      .set(stack.auth)
      .expect(200);
    expect(claimed.body.jobAgentConfig.token).toBe(SECRET);
    expect(claimed.body.dispatchContext.variables).toEqual({ SLUG: 'svc-refs' });
  });
});
