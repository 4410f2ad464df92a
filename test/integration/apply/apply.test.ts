import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { listen, type ApiServer } from '../../../api/server';
import { applyCommand, type ApplyCommandOptions } from '../../../cli/commands/apply';
import { recordsApi } from '../../helpers/orchestration';
import { settled } from '../../helpers/settled';
import { startTestStack, type TestStack } from '../../helpers/stack';

const EXAMPLE = path.join(__dirname, '../../../examples/scenario.yaml');

/** `flightdeck apply` against a real API: the example builds the orchestration scenario from nothing. */
describe('flightdeck apply', () => {
  let stack: TestStack;
  let server: ApiServer;
  let api: ReturnType<typeof recordsApi>;
  let dir: string;

  beforeAll(async () => {
    stack = await startTestStack();
    server = await listen(stack.app.app, '127.0.0.1', 0);
    api = recordsApi(stack);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'flightdeck-apply-'));
  });
  afterAll(async () => {
    await server.close();
    await stack.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function apply(file: string | string[], options: Partial<ApplyCommandOptions> = {}) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await applyCommand(
      { file: [file].flat(), api: server.url, key: stack.apiKey, ...options },
      (line) => out.push(line),
      (line) => err.push(line),
    );
    return { code, out: out.join('\n'), err: err.join('\n') };
  }

  function write(name: string, text: string): string {
    const file = path.join(dir, name);
    fs.writeFileSync(file, text);
    return file;
  }

  async function counts() {
    const total = async (collection: string) =>
      (await api.get<{ total: number }>(`${collection}?limit=1`)).total;
    return {
      agents: await total('/job-agents'),
      systems: await total('/systems'),
      environments: await total('/environments'),
      deployments: await total('/deployments'),
      resources: await total('/resources'),
      policies: await total('/policies'),
    };
  }

  it('plans the example on an empty workspace with --dry-run and changes nothing', async () => {
    const result = await apply(EXAMPLE, { dryRun: true });
    expect(result.err).toBe('');
    expect(result.code).toBe(0);
    expect(result.out).toMatch(/\+ Deployment "api" would create/);
    expect(result.out).toMatch(/\+ Variable "api\.LOG_LEVEL" would create/);
    expect(result.out).toMatch(/\+ DeploymentVersion "db@1\.0\.0" would create {2}\[.*scenario\.yaml#13\]/);
    expect(result.out).toMatch(/Dry run: 15 to create, 0 to update, 0 unchanged\. Nothing was changed\./);
    expect(await counts()).toEqual({
      agents: 0,
      systems: 0,
      environments: 0,
      deployments: 0,
      resources: 0,
      policies: 0,
    });
  });

  it('builds the orchestration scenario from nothing: exactly 4 queued jobs', async () => {
    const result = await apply(EXAMPLE);
    expect(result.err).toBe('');
    expect(result.code).toBe(0);
    expect(result.out).toMatch(/Applied: 15 created, 0 updated, 0 unchanged\./);
    expect(await counts()).toEqual({
      agents: 1,
      systems: 1,
      environments: 2,
      deployments: 2,
      resources: 4,
      policies: 1,
    });
    const jobs = await api.jobsSettleAt(4, '&status=queued');
    const targets = jobs.map((job) => `${job.deploymentId}/${job.environmentId}/${job.resourceId}`);
    expect(new Set(targets).size).toBe(4);

    const [deployment] = (
      await api.get<{ items: { id: string; jobAgents: unknown[] }[] }>(
        `/deployments?cel=${encodeURIComponent('deployment.slug == "api"')}`,
      )
    ).items;
    expect(deployment!.jobAgents).toEqual([
      expect.objectContaining({ ref: 'puller', config: { script: './deploy-api.sh' } }),
    ]);
    const variables = await api.get<{
      items: { variable: { key: string; defaultValue: unknown }; values: unknown[] }[];
    }>(`/deployments/${deployment!.id}/variables`);
    const logLevel = variables.items.find((entry) => entry.variable.key === 'LOG_LEVEL')!;
    expect(logLevel.variable.defaultValue).toBe('info');
    expect(logLevel.values).toEqual([
      expect.objectContaining({
        priority: 10,
        value: 'debug',
        resourceSelector: 'resource.metadata["env"] == "dev"',
      }),
    ]);
    const region = variables.items.find((entry) => entry.variable.key === 'REGION')!;
    expect(region.values).toEqual([
      expect.objectContaining({ referenceValue: { reference: 'resource', path: ['metadata', 'region'] } }),
    ]);
    const devService = jobs.find(
      (job) => (job.dispatchContext.resource as { name: string }).name === 'dev-service',
    )!;
    expect(devService.dispatchContext.variables).toEqual(
      expect.objectContaining({ LOG_LEVEL: 'debug', REGION: 'us-east-1' }),
    );
  });

  it('reports no changes on a second apply and creates nothing', async () => {
    const result = await apply(EXAMPLE);
    expect(result.code).toBe(0);
    expect(result.out).toMatch(/No changes: all 15 record\(s\) are up to date\./);
    expect(result.out).not.toMatch(/created|updated/);
    await settled(stack);
    expect(await api.jobs()).toHaveLength(4);
  });

  it('updates only what a changed file changes, then converges', async () => {
    const changed = fs
      .readFileSync(EXAMPLE, 'utf8')
      .replace('description: The web shop and its database', 'description: The shop')
      .replace('literal_value: debug', 'literal_value: trace')
      .replace(
        'metadata: { env: dev, region: us-east-1 }\n---\ntype: Resource\nidentifier: dev-database',
        'metadata: { env: dev, region: us-west-2 }\n---\ntype: Resource\nidentifier: dev-database',
      );
    const file = write('changed.yaml', changed);
    const planned = await apply(file, { dryRun: true });
    expect(planned.out).toMatch(/Dry run: 0 to create, 3 to update, 12 unchanged/);
    const result = await apply(file);
    expect(result.code).toBe(0);
    expect(result.out).toMatch(/~ System "shop" updated \(description\)/);
    expect(result.out).toMatch(/~ Variable "api\.LOG_LEVEL" updated \(values\)/);
    expect(result.out).toMatch(/~ Resource "dev-service" updated \(metadata\)/);
    expect(result.out).toMatch(/Applied: 0 created, 3 updated, 12 unchanged\./);
    expect((await apply(file)).out).toMatch(/No changes/);
  });

  it('compares secrets by presence, and rewrites them when asked', async () => {
    const file = write(
      'argo.yaml',
      `type: JobAgent\nname: argo\nagentType: argo-cd\nconfig:\n  server_url: https://argo.example.com\n  api_key: s3cret\n  template: "{}"\n`,
    );
    expect((await apply(file)).out).toMatch(/\+ JobAgent "argo" created/);
    expect((await apply(file)).out).toMatch(/No changes/);
    expect((await apply(file, { rewriteSecrets: true })).out).toMatch(/~ JobAgent "argo" updated \(config\)/);
  });

  it('refuses bad documents with their file and index, changing nothing', async () => {
    const before = await counts();
    const file = write(
      'bad.yaml',
      [
        'type: System\nname: Ok system',
        'type: Environment\nname: broken\nresourceSelector: resource.kind ==',
        'type: Deployment\nname: x\nslug: x\nsytem: Shop',
        'type: Gizmo\nname: y',
        'type: Resource\nname: nameless',
      ].join('\n---\n'),
    );
    const result = await apply(file);
    expect(result.code).toBe(1);
    expect(result.err).toContain(`${file}, document 2 (Environment "broken"): resourceSelector:`);
    expect(result.err).toContain(`${file}, document 3 (Deployment "x"): sytem: unknown field`);
    expect(result.err).toContain(`${file}, document 4: type must be one of`);
    expect(result.err).toContain(`${file}, document 5 (Resource "nameless"): identifier:`);
    expect(result.err).toMatch(/4 invalid document\(s\); nothing was changed/);

    const syntax = write('syntax.yaml', 'type: System\nname: fine\n---\ntype: [unclosed\n');
    const broken = await apply(syntax);
    expect(broken.code).toBe(1);
    expect(broken.err).toContain(`${syntax}, document 2:`);

    const missing = await apply([syntax, path.join(dir, 'nowhere.yaml')]);
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/nowhere\.yaml: no such file or directory; nothing was changed/);

    const dangling = write(
      'dangling.yaml',
      'type: Environment\nname: lost\nsystem: Nowhere\n---\ntype: System\nname: Elsewhere',
    );
    const refused = await apply(dangling);
    expect(refused.code).toBe(1);
    expect(refused.err).toContain(`${dangling}, document 1 (Environment "lost"): system "Nowhere"`);
    expect(await counts()).toEqual(before);
  });

  it('stops at a document the server refuses and names it', async () => {
    const file = write(
      'refused.yaml',
      'type: DeploymentVersion\ndeployment: api\ntag: 1.0.0\nstatus: building\n',
    );
    const result = await apply(file);
    expect(result.code).toBe(1);
    expect(result.err).toContain(`${file}, document 1 (DeploymentVersion "api@1.0.0"): PATCH`);
    expect(result.err).toMatch(/409/);
  });
});
