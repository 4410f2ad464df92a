import { randomUUID } from 'node:crypto';
import { refusedWithoutWrites, sqlOf } from '../../helpers/recordFixtures';
import { expectFieldError } from '../../helpers/records';
import { startTestStack, type TestStack } from '../../helpers/stack';

const ADMIN_TOKEN = 'workspace-secrets-admin-token-of-32-chars';

/**
 * Workspace secrets (docs/security.md "Workspace secrets"): written by name and never answered; referenced
 * from credential fields as `secret://<name>`, answered as written, and bound to the destination of
 * the first record that references them.
 */
describe('workspace secrets over HTTP', () => {
  let stack: TestStack;
  const ws = () => `/v1/workspaces/${stack.workspaceId}`;
  const sql = sqlOf(() => stack);
  const TABLES = ['workspace_secret', 'policy', 'job_agent'];
  const putSecret = (name: string, value: unknown) =>
    stack.http.put(`${ws()}/secrets/${name}`).set(stack.auth).send({ value });
  const putAgent = (id: string, config: Record<string, unknown>) =>
    stack.http
      .put(`${ws()}/job-agents/${id}`)
      .set(stack.auth)
      .send({ name: `argo-${id}`, type: 'argo-cd', config });
  const datadogPolicy = (name: string, provider: Record<string, unknown>) => ({
    name,
    selector: 'false',
    rules: [
      {
        verification: {
          metrics: [
            {
              name: 'errors',
              intervalSeconds: 60,
              count: 1,
              provider: { type: 'datadog', queries: { a: 'sum:errors{*}' }, ...provider },
              successCondition: 'result.value < 1',
            },
          ],
        },
      },
    ],
  });

  beforeAll(async () => {
    stack = await startTestStack({ worker: false, adminToken: ADMIN_TOKEN });
  });
  afterAll(() => stack.close());

  it('writes a secret by name, replaces its value, and never answers it', async () => {
    const created = await putSecret('dd-api', 'first-api-key');
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      name: 'dd-api',
      reference: 'secret://dd-api',
      boundTo: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const replaced = await putSecret('dd-api', 'rotated-api-key');
    expect(replaced.status).toBe(200);
    expect(replaced.body.createdAt).toBe(created.body.createdAt);
    const listed = await stack.http.get(`${ws()}/secrets`).set(stack.auth);
    expect(listed.body).toMatchObject({ total: 1, items: [{ name: 'dd-api', boundTo: null }] });
    expect(JSON.stringify(listed.body)).not.toContain('api-key');
    const [row] = await sql<{ value: string }[]>(`SELECT value FROM workspace_secret WHERE name = 'dd-api'`);
    expect(row!.value).toMatch(/^fd2:/);
    expect(row!.value).not.toContain('rotated');
  });

  it('refuses bad names and bodies with 400, writing nothing', async () => {
    for (const name of ['-leading-dash', 'has%20space', 'a'.repeat(129)])
      expect((await refusedWithoutWrites(stack, TABLES, () => putSecret(name, 'v'))).status).toBe(400);
    await refusedWithoutWrites(stack, TABLES, () => putSecret('empty', ''));
    await refusedWithoutWrites(stack, TABLES, () =>
      stack.http.put(`${ws()}/secrets/extra`).set(stack.auth).send({ value: 'v', destination: 'x' }),
    );
  });

  it('keeps a policy credential written as a reference as written, and binds the secret to its provider', async () => {
    await putSecret('dd-app', 'the-app-key');
    const provider = { apiKey: 'secret://dd-api', appKey: 'secret://dd-app' };
    const created = await stack.http
      .post(`${ws()}/policies`)
      .set(stack.auth)
      .send(datadogPolicy('dd', provider));
    expect(created.status).toBe(202);
    const read = await stack.http.get(`${ws()}/policies/${created.body.id}`).set(stack.auth);
    expect(read.body.rules[0].verification.metrics[0].provider).toEqual({
      type: 'datadog',
      queries: { a: 'sum:errors{*}' },
      ...provider,
    });
    const secret = await stack.http.get(`${ws()}/secrets/dd-api`).set(stack.auth);
    expect(secret.body.boundTo).toEqual(['datadog', 'datadoghq.com']);
  });

  it('refuses a reference to a missing secret (400) or to one bound elsewhere (409), writing nothing', async () => {
    const missing = await refusedWithoutWrites(stack, TABLES, () =>
      stack.http
        .post(`${ws()}/policies`)
        .set(stack.auth)
        .send(datadogPolicy('missing', { apiKey: 'secret://nowhere', appKey: 'plain-app-key' })),
    );
    expectFieldError(
      missing,
      'body.rules[0].verification.metrics[0].provider.apiKey',
      'no secret named nowhere',
    );
    const moved = await refusedWithoutWrites(stack, TABLES, () =>
      stack.http
        .post(`${ws()}/policies`)
        .set(stack.auth)
        .send(
          datadogPolicy('moved', {
            site: 'attacker-datadoghq.com',
            apiKey: 'secret://dd-api',
            appKey: 'x',
          }),
        ),
    );
    expect(moved.status).toBe(409);
    expect(moved.body.code).toBe('credential_destination_changed');
    const agent = await refusedWithoutWrites(stack, TABLES, () =>
      putAgent(randomUUID(), { server_url: 'https://argo.example', api_key: 'secret://dd-api' }),
    );
    expect(agent.status).toBe(409);
    await refusedWithoutWrites(stack, TABLES, () =>
      stack.http
        .post(`${ws()}/policies`)
        .set(stack.auth)
        .send(datadogPolicy('malformed', { apiKey: 'secret://bad name', appKey: 'x' })),
    );
  });

  it("keeps a job agent's credential reference as written, and another workspace cannot use the name", async () => {
    await putSecret('argo-token', 'the-argo-token');
    const config = { server_url: 'https://argo.example', api_key: 'secret://argo-token' };
    const id = randomUUID();
    expect((await putAgent(id, config)).status).toBe(202);
    const agent = await stack.http.get(`${ws()}/job-agents/${id}`).set(stack.auth);
    expect(agent.body.config).toEqual(config);

    const other = await stack.http
      .post('/v1/workspaces')
      .set({ Authorization: `Bearer ${ADMIN_TOKEN}` })
      .send({ name: 'Neighbour' });
    expect(other.status).toBe(201);
    const neighbour = { 'x-api-key': other.body.apiKey.key as string };
    const base = `/v1/workspaces/${other.body.id as string}`;
    const theirs = await stack.http
      .put(`${base}/job-agents/${randomUUID()}`)
      .set(neighbour)
      .send({ name: 'argo', type: 'argo-cd', config });
    expectFieldError(theirs, 'body.config.api_key', 'no secret named argo-token');
    expect((await stack.http.get(`${base}/secrets/argo-token`).set(neighbour)).status).toBe(404);
    expect((await stack.http.delete(`${base}/secrets/argo-token`).set(neighbour)).status).toBe(404);
  });

  it('deletes a secret, after which its name answers 404', async () => {
    const deleted = await stack.http.delete(`${ws()}/secrets/argo-token`).set(stack.auth);
    expect(deleted.status).toBe(200);
    expect(deleted.body.name).toBe('argo-token');
    expect((await stack.http.get(`${ws()}/secrets/argo-token`).set(stack.auth)).status).toBe(404);
  });
});
