import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import {
  CATALOG_TABLES,
  deploymentFieldsOf as fieldsOf,
  recordMaker,
  REDACTED,
  sqlOf,
  TIMESTAMP,
  UUID,
} from '../../helpers/recordFixtures';
import {
  expectFieldError,
  expectNothingWritten as expectNothingWrittenIn,
  expectProblem,
  withoutMessage,
} from '../../helpers/records';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * Deployments over HTTP: create (agent secrets sealed), replace, read by name, list with CEL, system links,
 * delete, validation. 401, another workspace's deployment (404) and duplicates (409): contract.test.ts.
 */
describe('deployments over HTTP', () => {
  let stack: TestStack;
  const { base, unique, createSystem, createDeployment, createVersion } = recordMaker(() => stack);
  const sql = sqlOf(() => stack);
  const expectNothingWritten = (request: () => PromiseLike<Response>) =>
    expectNothingWrittenIn(stack, CATALOG_TABLES, request);

  async function storedJobAgents(deploymentId: string) {
    const rows = await sql<{ job_agents: { ref: string; config: Record<string, unknown> }[] }[]>(
      'SELECT job_agents FROM deployment WHERE id = ?',
      [deploymentId],
    );
    return rows[0]!.job_agents;
  }

  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
  });
  afterAll(() => stack.close());

  it('creates a deployment with POST (202), hiding sensitive agent configuration, and stores it sealed', async () => {
    const created = await stack.http
      .post(`${base()}/deployments`)
      .set(stack.auth)
      .send({
        name: 'Web',
        slug: 'web-frontend',
        description: 'The storefront',
        resourceSelector: 'resource.kind == "service"',
        jobAgents: [
          {
            ref: 'github-runner',
            config: { repo: 'acme/web', token: 'ghp_plaintext_token' },
            selector: 'resource.metadata["region"] == "eu"',
          },
          { ref: 'argo' },
        ],
        metadata: { team: 'storefront' },
      })
      .expect(202);
    expect(created.body).toEqual({
      id: UUID,
      workspaceId: stack.workspaceId,
      name: 'Web',
      slug: 'web-frontend',
      description: 'The storefront',
      resourceSelector: 'resource.kind == "service"',
      jobAgents: [
        {
          ref: 'github-runner',
          config: { repo: 'acme/web', token: REDACTED },
          selector: 'resource.metadata["region"] == "eu"',
        },
        { ref: 'argo', config: {} },
      ],
      metadata: { team: 'storefront' },
      systemIds: [],
      jobAgentSelector: '',
      jobAgentConfig: {},
      createdAt: TIMESTAMP,
      updatedAt: TIMESTAMP,
      message: 'Deployment created',
    });
    expect(JSON.stringify(created.body)).not.toContain('ghp_plaintext_token');

    const fetched = await stack.http
      .get(`${base()}/deployments/${created.body.id}`)
      .set(stack.auth)
      .expect(200);
    const record = withoutMessage(created.body);
    expect(fetched.body).toEqual({ ...record, deployment: record, systems: [], variables: [] });

    const [stored] = await storedJobAgents(created.body.id);
    const sealedToken = stored!.config.token;
    expect(typeof sealedToken).toBe('string');
    expect(sealedToken as string).toMatch(/^fd2:/);
    expect(sealedToken).not.toContain('ghp_plaintext_token');
    expect(
      stack.secrets.forRecord(stack.workspaceId, 'deployment', created.body.id).open(sealedToken as string),
    ).toBe('ghp_plaintext_token');
    expect(stored!.config.repo).toBe('acme/web');
  });

  it('turns the applier spelling jobAgent {ref} with jobAgentConfig into one jobAgents entry', async () => {
    const created = await stack.http
      .post(`${base()}/deployments`)
      .set(stack.auth)
      .send({
        name: 'Applier',
        slug: unique('applier'),
        jobAgent: { ref: 'terraform-cloud' },
        jobAgentConfig: { workspace: 'infra', token: 'tfc-secret' },
      })
      .expect(202);
    expect(created.body.jobAgents).toEqual([
      { ref: 'terraform-cloud', config: { workspace: 'infra', token: REDACTED } },
    ]);
    const stored = await storedJobAgents(created.body.id);
    expect(stored).toEqual([
      { ref: 'terraform-cloud', config: { workspace: 'infra', token: expect.stringMatching(/^fd2:/) } },
    ]);

    const withoutConfig = await createDeployment({ jobAgent: { ref: 'argo' } });
    expect(withoutConfig.jobAgents).toEqual([{ ref: 'argo', config: {} }]);
  });

  it('creates by PUT, replaces (202 both), and keeps a sensitive value written back as {"sensitive": true}', async () => {
    const id = randomUUID();
    const slug = unique('put-deployment');
    const created = await stack.http
      .put(`${base()}/deployments/${id}`)
      .set(stack.auth)
      .send({
        name: 'Put deployment',
        slug,
        jobAgents: [{ ref: 'github', config: { token: 'first-secret' } }],
      })
      .expect(202);
    expect(created.body).toEqual({
      id,
      workspaceId: stack.workspaceId,
      name: 'Put deployment',
      slug,
      jobAgents: [{ ref: 'github', config: { token: REDACTED } }],
      metadata: {},
      systemIds: [],
      jobAgentSelector: '',
      jobAgentConfig: {},
      createdAt: TIMESTAMP,
      updatedAt: TIMESTAMP,
      message: 'Deployment created',
    });
    const [sealedAtCreate] = await storedJobAgents(id);

    // Sent back as read: "" (no selector) and {} (no selector configuration) beside the jobAgents.
    const { name, description, resourceSelector, jobAgents, jobAgentSelector, jobAgentConfig, metadata } =
      created.body;
    const writtenBack = await stack.http
      .put(`${base()}/deployments/${id}`)
      .set(stack.auth)
      .send({
        name,
        slug,
        description,
        resourceSelector,
        jobAgents,
        jobAgentSelector,
        jobAgentConfig,
        metadata: { ...metadata, edited: 'yes' },
      })
      .expect(202);
    expect(writtenBack.body).toEqual({
      ...created.body,
      metadata: { edited: 'yes' },
      updatedAt: TIMESTAMP,
      message: 'Deployment updated',
    });
    const [kept] = await storedJobAgents(id);
    expect(kept!.config.token).toBe(sealedAtCreate!.config.token);
    const secrets = stack.secrets.forRecord(stack.workspaceId, 'deployment', id);
    expect(secrets.open(kept!.config.token as string)).toBe('first-secret');

    await stack.http
      .put(`${base()}/deployments/${id}`)
      .set(stack.auth)
      .send({ name, slug, jobAgents: [{ ref: 'github', config: { token: 'second-secret' } }] })
      .expect(202);
    const [rotated] = await storedJobAgents(id);
    expect(rotated!.config.token).toMatch(/^fd2:/);
    expect(secrets.open(rotated!.config.token as string)).toBe('second-secret');
  });

  it('finds a deployment by name, refuses a second one of that name (409), and answers 409 when older data shares it', async () => {
    const sharedName = unique('Shared name');
    const first = await createDeployment({ name: sharedName });
    const found = await stack.http
      .get(`${base()}/deployments/name/${encodeURIComponent(sharedName)}`)
      .set(stack.auth)
      .expect(200);
    const byId = await stack.http.get(`${base()}/deployments/${first.id}`).set(stack.auth).expect(200);
    expect(found.body).toEqual(byId.body);
    expect(found.body).toEqual({ ...first, deployment: first, systems: [], variables: [] });

    const duplicate = await expectNothingWritten(() =>
      stack.http
        .post(`${base()}/deployments`)
        .set(stack.auth)
        .send({ name: sharedName, slug: unique('other-slug') }),
    );
    expectProblem(duplicate, 409, 'duplicate_name');
    // Two deployments of one name, as stored before names were unique.
    const other = await createDeployment();
    await sql('UPDATE deployment SET name = ? WHERE id = ?', [sharedName, other.id]);
    const ambiguous = await expectNothingWritten(() =>
      stack.http.get(`${base()}/deployments/name/${encodeURIComponent(sharedName)}`).set(stack.auth),
    );
    expectProblem(ambiguous, 409, 'ambiguous');
    expectProblem(
      await stack.http.get(`${base()}/deployments/name/no-such-deployment`).set(stack.auth),
      404,
      'not_found',
    );
  });

  it('lists deployments oldest first, filtered by a CEL expression over `deployment`', async () => {
    const team = unique('team');
    const api = await createDeployment({ slug: `${team}-api`, metadata: { team } });
    await createDeployment({ slug: `${team}-worker`, metadata: { team: 'someone-else' } });
    const web = await createDeployment({ slug: `${team}-web`, metadata: { team } });
    const expression = `deployment.metadata["team"] == "${team}"`;

    const filtered = await stack.http
      .get(`${base()}/deployments`)
      .query({ cel: expression })
      .set(stack.auth)
      .expect(200);
    expect(filtered.body).toMatchObject({ items: [api, web], total: 2, limit: 50, offset: 0 });

    const bySlug = await stack.http
      .get(`${base()}/deployments`)
      .query({ cel: `deployment.slug.startsWith("${team}-w")`, limit: 1 })
      .set(stack.auth)
      .expect(200);
    expect(bySlug.body).toMatchObject({ total: 2, limit: 1, offset: 0 });
    expect(bySlug.body.items).toHaveLength(1);
    expect(bySlug.body.items[0].slug).toBe(`${team}-worker`);
  });

  it('shows the systems a deployment is linked to in systemIds, in link order', async () => {
    const deployment = await createDeployment();
    const firstSystem = await createSystem();
    const secondSystem = await createSystem();
    for (const system of [firstSystem, secondSystem]) {
      await stack.http
        .put(`${base()}/systems/${system.id}/deployments/${deployment.id}`)
        .set(stack.auth)
        .expect(202);
    }
    const fetched = await stack.http
      .get(`${base()}/deployments/${deployment.id}`)
      .set(stack.auth)
      .expect(200);
    expect(fetched.body.systemIds).toEqual([firstSystem.id, secondSystem.id]);
    expect(fetched.body.systems.map((system: { id: string }) => system.id)).toEqual([
      firstSystem.id,
      secondSystem.id,
    ]);
    const listed = await stack.http
      .get(`${base()}/deployments`)
      .query({ cel: `deployment.id == "${deployment.id}"` })
      .set(stack.auth)
      .expect(200);
    // Each list item is Ctrlplane's DeploymentAndSystems too: the record as `deployment`, and its `systems`.
    const { variables: _variables, ...withSystems } = fetched.body;
    expect(listed.body.items).toEqual([withSystems]);
    expect(listed.body.items[0].deployment).toEqual(fieldsOf(fetched.body));
  });

  it('deletes a deployment (202) with its versions', async () => {
    const deployment = await createDeployment();
    await createVersion(deployment.id, { tag: '1.0.0', status: 'building' });
    const deleted = await stack.http
      .delete(`${base()}/deployments/${deployment.id}`)
      .set(stack.auth)
      .expect(202);
    expect(deleted.body).toEqual({ id: deployment.id, message: 'Deployment deleted' });
    expectProblem(
      await stack.http.get(`${base()}/deployments/${deployment.id}`).set(stack.auth),
      404,
      'not_found',
    );
    const versions = await sql(
      'SELECT count(*)::int AS count FROM deployment_version WHERE deployment_id = ?',
      [deployment.id],
    );
    expect(versions).toEqual([{ count: 0 }]);
  });

  it.each([
    ['a slug with spaces', { name: 'Bad', slug: 'bad slug' }, 'body.slug'],
    ['a missing slug', { name: 'Bad' }, 'body.slug'],
    [
      'a job agent without ref',
      { name: 'Bad', slug: 'bad-agent', jobAgents: [{ config: {} }] },
      'body.jobAgents[0].ref',
    ],
    [
      'jobAgents together with jobAgent',
      { name: 'Bad', slug: 'bad-both', jobAgents: [], jobAgent: { ref: 'argo' } },
      'body.jobAgent',
    ],
    [
      'jobAgentConfig without jobAgent (an empty one says nothing, and is taken)',
      { name: 'Bad', slug: 'bad-config', jobAgentConfig: { image: 'web' } },
      'body.jobAgentConfig',
    ],
    [
      'a sensitive marker with no stored value to keep',
      { name: 'Bad', slug: 'bad-marker', jobAgents: [{ ref: 'github', config: { token: REDACTED } }] },
      'body.jobAgents[0].config.token',
    ],
  ])('refuses %s with 400 naming the field, and writes nothing', async (_, body, path) => {
    const res = await expectNothingWritten(() =>
      stack.http.post(`${base()}/deployments`).set(stack.auth).send(body),
    );
    expectFieldError(res, path);
  });

  it('refuses selectors that are not valid CEL with 400 giving their position, and writes nothing', async () => {
    const resourceSelector = await expectNothingWritten(() =>
      stack.http
        .post(`${base()}/deployments`)
        .set(stack.auth)
        .send({ name: 'Bad', slug: 'bad-selector', resourceSelector: 'resource.kind ==' }),
    );
    expectFieldError(resourceSelector, 'body.resourceSelector', 'line 1, column');

    const agentSelector = await expectNothingWritten(() =>
      stack.http
        .post(`${base()}/deployments`)
        .set(stack.auth)
        .send({
          name: 'Bad',
          slug: 'bad-agent-selector',
          jobAgents: [{ ref: 'argo', selector: 'resource.kind ==' }],
        }),
    );
    expectFieldError(agentSelector, 'body.jobAgents[0].selector', 'line 1, column');

    const listFilter = await expectNothingWritten(() =>
      stack.http.get(`${base()}/deployments`).query({ cel: 'deployment.slug ==' }).set(stack.auth),
    );
    expectFieldError(listFilter, 'query.cel', 'line 1, column');
  });

  it('answers a filtered deployments page with exactly {items, total, totalIsExact, nextCursor, limit, offset}', async () => {
    const res = await stack.http
      .get(`${base()}/deployments`)
      .query({ limit: 2, offset: 0, cel: 'deployment.slug != ""' })
      .set(stack.auth)
      .expect(200);
    // More than a page matches, so the page says where the next begins.
    expect(res.body.total).toBeGreaterThan(2);
    expect(Object.keys(res.body).sort()).toEqual([
      'items',
      'limit',
      'nextCursor',
      'offset',
      'total',
      'totalIsExact',
    ]);
    expect(res.body).toMatchObject({ limit: 2, offset: 0 });
  });
});
