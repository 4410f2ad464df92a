import { recordsApi } from '../../helpers/orchestration';
import { startTestStack, type TestStack } from '../../helpers/stack';

interface Page {
  items: { tag: string }[];
  total: number;
}

/**
 * The versions eligible on a release target — ready versions passing every policy rule there now,
 * newest first; a CEL filter, then pages; rules skipped by id (docs/api.md "Endpoints", Release targets).
 */
describe('eligible versions of a release target', () => {
  let stack: TestStack;
  let api: ReturnType<typeof recordsApi>;
  let path: string;
  let selectorRuleId: string;

  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
    api = recordsApi(stack);
    const system = await api.system('Eligible');
    const environment = await api.environment(
      'eligible-prod',
      'resource.metadata["pool"] == "eligible"',
      system,
    );
    const deployment = await api.deployment('eligible-svc', system);
    const resource = await api.resource('eligible-node', 'service', { pool: 'eligible' });
    for (const tag of ['v1.0.0', 'v2.0.0', 'v2.1.0']) await api.version(deployment, tag);
    await api.version(deployment, 'v3.0.0', { status: 'building' });
    path = `${api.ws}/release-targets/${resource}-${environment}-${deployment}/eligible-versions`;
  });
  afterAll(() => stack.close());

  const eligible = async (body: object = {}, query = '') =>
    (await stack.http.post(`${path}${query}`).set(stack.auth).send(body).expect(200)).body as Page;
  const tags = (page: Page) => page.items.map((item) => item.tag);

  it('lists every ready version, newest first, while no rule applies', async () => {
    expect(tags(await eligible())).toEqual(['v2.1.0', 'v2.0.0', 'v1.0.0']);
  });

  it("drops the versions a policy's rules refuse, unless those rules are skipped", async () => {
    const policy = await api.send(
      'post',
      '/policies',
      {
        name: 'only v2',
        selector: 'deployment.slug == "eligible-svc"',
        rules: [{ versionSelector: { selector: 'version.tag.startsWith("v2.")' } }],
      },
      [202],
    );
    selectorRuleId = policy.rules[0].id;
    expect(await eligible()).toMatchObject({ total: 2 });
    expect(tags(await eligible())).toEqual(['v2.1.0', 'v2.0.0']);
    expect(tags(await eligible({ excludeRuleIds: [selectorRuleId] }))).toEqual([
      'v2.1.0',
      'v2.0.0',
      'v1.0.0',
    ]);
  });

  it('filters with CEL over the version, then pages', async () => {
    expect(tags(await eligible({ filter: 'version.tag == "v2.0.0"' }))).toEqual(['v2.0.0']);
    const second = await eligible({}, '?limit=1&offset=1');
    expect(second).toMatchObject({ total: 2, limit: 1, offset: 1 });
    expect(tags(second)).toEqual(['v2.0.0']);
  });

  it('refuses a bad filter and answers 404 for an unknown target', async () => {
    const bad = await stack.http.post(path).set(stack.auth).send({ filter: 'version.tag ==' });
    expect(bad.status).toBe(400);
    expect(bad.headers['content-type']).toMatch(/problem\+json/);
    const unknown = path.replace(
      /release-targets\/[^/]+\//,
      `release-targets/${'0'.repeat(8)}-0000-7000-8000-${'0'.repeat(12)}-${'0'.repeat(8)}-0000-7000-8000-${'0'.repeat(12)}-${'0'.repeat(8)}-0000-7000-8000-${'0'.repeat(12)}/`,
    );
    await stack.http.post(unknown).set(stack.auth).send({}).expect(404);
  });
});
