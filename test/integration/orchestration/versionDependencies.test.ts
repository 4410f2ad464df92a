import { randomUUID } from 'node:crypto';
import { eventually } from '../../helpers/eventually';
import { recordsApi } from '../../helpers/orchestration';
import { startTestStack, type TestStack } from '../../helpers/stack';

interface Release {
  id: string;
  phase: string;
  phaseReason: string | null;
  versionId: string;
}

/**
 * Deployment-version dependencies (docs/api.md "Releases and jobs"). A version that depends on another
 * deployment deploys on a resource only once that deployment's current version there matches the selector;
 * the dependency's success wakes it. Dependencies are declared inline at version creation (atomically)
 * or one by one, and are checked: CEL, not the version's own deployment, the workspace's deployments.
 * Ctrlplane's `deploymentDependency` policy rule holds releases the same way, by policy.
 */
describe('deployment-version dependencies', () => {
  let stack: TestStack;
  let api: ReturnType<typeof recordsApi>;
  const ids = {} as Record<'system' | 'prod' | 'db' | 'app' | 'node', string>;
  const ws = () => `/v1/workspaces/${stack.workspaceId}`;

  beforeAll(async () => {
    stack = await startTestStack();
    api = recordsApi(stack);
    await api.agent('runner', 'test-runner', { status: 'successful', delaySeconds: 0 });
    ids.system = await api.system('Deps');
    ids.prod = await api.environment('deps-prod', 'resource.metadata["pool"] == "deps"', ids.system);
    ids.db = await api.deployment('deps-db', ids.system, { jobAgents: [{ ref: 'runner' }] });
    ids.app = await api.deployment('deps-app', ids.system, { jobAgents: [{ ref: 'runner' }] });
    ids.node = await api.resource('deps-node', 'service', { pool: 'deps' });
  });
  afterAll(() => stack.close());

  const releasesOf = async (deploymentId: string) =>
    (await api.get<{ items: Release[] }>(`/releases?deploymentId=${deploymentId}&limit=100`)).items;
  const releaseOfVersion = (deploymentId: string, versionId: string, phase?: string, reason?: RegExp) =>
    eventually(
      async () => {
        const release = (await releasesOf(deploymentId)).find((r) => r.versionId === versionId);
        if (!release || (phase && release.phase !== phase)) return undefined;
        if (reason && !reason.test(release.phaseReason ?? '')) return undefined;
        return release;
      },
      { what: `the release of ${versionId} to be ${phase ?? 'there'} (${reason ?? ''})`, timeoutMs: 30_000 },
    );

  it('holds a version until its dependency runs a matching version on the resource', async () => {
    const app = await api.send(
      'post',
      `/deployments/${ids.app}/versions`,
      { tag: 'app-1', dependencies: { [ids.db]: { versionSelector: 'version.tag.startsWith("v2.")' } } },
      [200],
    );
    const declared = { [ids.db]: { versionSelector: 'version.tag.startsWith("v2.")' } };
    expect(app.dependencies).toEqual(declared);
    expect((await api.get<{ dependencies: object }>(`/deployment-versions/${app.id}`)).dependencies).toEqual(
      declared,
    );
    expect(await api.get(`/deployment-versions/${app.id}/dependencies`)).toEqual([
      {
        deploymentVersionId: app.id,
        dependencyDeploymentId: ids.db,
        versionSelector: 'version.tag.startsWith("v2.")',
      },
    ]);
    await releaseOfVersion(ids.app, app.id, 'pending', /deps-db has no version deployed here yet/);

    const old = await api.version(ids.db, 'v1.0.0');
    await releaseOfVersion(ids.db, old, 'succeeded');
    await releaseOfVersion(ids.app, app.id, 'pending', /deps-db runs v1\.0\.0 here, which does not match/);

    const current = await api.version(ids.db, 'v2.0.0');
    await releaseOfVersion(ids.db, current, 'succeeded');
    await releaseOfVersion(ids.app, app.id, 'succeeded');
  });

  it("holds a release under a deploymentDependency policy rule until another deployment's version here matches", async () => {
    const environment = await api.environment('dd-prod', 'resource.metadata["pool"] == "dd"', ids.system);
    expect(environment).toBeTruthy();
    const db = await api.deployment('dd-db', ids.system, { jobAgents: [{ ref: 'runner' }] });
    const app = await api.deployment('dd-app', ids.system, { jobAgents: [{ ref: 'runner' }] });
    await api.resource('dd-node', 'service', { pool: 'dd' });
    await api.send(
      'post',
      '/policies',
      {
        name: 'app after db v2',
        selector: 'deployment.slug == "dd-app"',
        rules: [
          {
            deploymentDependency: {
              dependsOn: 'deployment.slug == "dd-db" && version.tag.startsWith("v2.")',
            },
          },
        ],
      },
      [202],
    );
    const appVersion = await api.version(app, 'a1');
    await releaseOfVersion(app, appVersion, 'pending', /no deployment runs a version here that matches/);
    const old = await api.version(db, 'v1.0.0');
    await releaseOfVersion(db, old, 'succeeded');
    await releaseOfVersion(app, appVersion, 'pending', /no deployment runs a version here that matches/);
    const current = await api.version(db, 'v2.0.0');
    await releaseOfVersion(db, current, 'succeeded');
    await releaseOfVersion(app, appVersion, 'succeeded');
    const refused = await stack.http
      .post(`${ws()}/policies`)
      .set(stack.auth)
      .send({ name: 'bad', rules: [{ deploymentDependency: { dependsOn: 'resource.kind == "x"' } }] });
    expect(refused.status).toBe(400);
  });

  it('declares, lists and removes dependencies one by one, and refuses bad ones', async () => {
    const version = await api.version(ids.app, 'app-2', { status: 'building' });
    const path = (dependency: string) => `${ws()}/deployment-versions/${version}/dependencies/${dependency}`;
    const declared = await stack.http
      .put(path(ids.db))
      .set(stack.auth)
      .send({ versionSelector: 'version.tag != ""' })
      .expect(202);
    expect(declared.body).toEqual({ id: ids.db, message: expect.any(String) });
    const refusals: [string, object, number][] = [
      [ids.app, { versionSelector: 'true' }, 400],
      [randomUUID(), { versionSelector: 'true' }, 404],
      [ids.db, { versionSelector: 'version.tag ==' }, 400],
      [ids.db, {}, 400],
    ];
    for (const [dependency, body, status] of refusals) {
      const res = await stack.http.put(path(dependency)).set(stack.auth).send(body);
      expect(res.status).toBe(status);
      expect(res.headers['content-type']).toMatch(/problem\+json/);
    }
    expect(await api.get(`/deployment-versions/${version}/dependencies`)).toEqual([
      { deploymentVersionId: version, dependencyDeploymentId: ids.db, versionSelector: 'version.tag != ""' },
    ]);
    const listed = await api.get<{ items: { id: string; dependencies: object }[] }>(
      `/deployments/${ids.app}/versions`,
    );
    expect(listed.items.find((item) => item.id === version)!.dependencies).toEqual({
      [ids.db]: { versionSelector: 'version.tag != ""' },
    });
    await stack.http.delete(path(ids.db)).set(stack.auth).expect(202);
    await stack.http.delete(path(ids.db)).set(stack.auth).expect(404);
    expect(await api.get(`/deployment-versions/${version}/dependencies`)).toEqual([]);
    await stack.http
      .get(`${ws()}/deployment-versions/${randomUUID()}/dependencies`)
      .set(stack.auth)
      .expect(404);
  });

  it('creates no version when an inline dependency is refused', async () => {
    for (const [dependencies, status] of [
      [{ [randomUUID()]: { versionSelector: 'true' } }, 404],
      [{ [ids.app]: { versionSelector: 'true' } }, 400],
    ] as const) {
      const res = await stack.http
        .post(`${ws()}/deployments/${ids.app}/versions`)
        .set(stack.auth)
        .send({ tag: 'refused', dependencies });
      expect(res.status).toBe(status);
    }
    const versions = await api.get<{ items: { tag: string }[] }>(
      `/deployments/${ids.app}/versions?limit=100`,
    );
    expect(versions.items.map((v) => v.tag)).not.toContain('refused');
  });
});
