import { randomUUID } from 'node:crypto';
import { fresh, type Records } from './recordContract';
import type { WorkspaceAccess } from './records';
import type { TestStack } from './stack';

/**
 * The records test/integration/records/contract.test.ts sends its requests about, and how it sees that
 * they wrote nothing.
 */

/**
 * Creates one workspace's records over HTTP (each write checked), and a second one of each kind whose
 * name, slug, tag, identifier or key the `taken` values hold; every name is new in the test file.
 */
export async function seedRecords(stack: TestStack, workspace: WorkspaceAccess): Promise<Records> {
  const label = fresh('r');
  const base = `/v1/workspaces/${workspace.id}`;
  const write = async (method: 'post' | 'put', path: string, body: object | undefined, status: number) => {
    const request = stack.http[method](`${base}${path}`).set(workspace.auth);
    const res = await (body ? request.send(body) : request);
    expect({ path, status: res.status, body: res.body }).toMatchObject({ path, status });
    return res.body as { id: string; slug?: string; name?: string; tag?: string };
  };

  const system = await write('post', '/systems', { name: `System ${label}` }, 202);
  const takenSystem = await write('post', '/systems', { name: `Taken system ${label}` }, 202);
  const environment = await write('post', '/environments', { name: `env-${label}` }, 202);
  const spareEnvironment = await write('post', '/environments', { name: `spare-env-${label}` }, 202);
  const deployment = await write(
    'post',
    '/deployments',
    {
      name: `Deployment ${label}`,
      slug: `deployment-${label}`,
      jobAgents: [{ ref: 'github', config: { token: `token-${label}` } }],
    },
    202,
  );
  const spareDeployment = await write(
    'post',
    '/deployments',
    { name: `Spare deployment ${label}`, slug: `spare-deployment-${label}` },
    202,
  );
  await write('put', `/systems/${system.id}/deployments/${deployment.id}`, undefined, 202);
  await write('put', `/systems/${system.id}/environments/${environment.id}`, undefined, 202);
  const versions = `/deployments/${deployment.id}/versions`;
  const version = await write('post', versions, { tag: `v-${label}`, status: 'building' }, 200);
  const takenVersion = await write('post', versions, { tag: `taken-v-${label}`, status: 'building' }, 200);
  await write(
    'put',
    `/deployment-versions/${version.id}/dependencies/${spareDeployment.id}`,
    { versionSelector: 'true' },
    202,
  );
  const identifier = `resource-${label}`;
  const resource = await write(
    'put',
    `/resources/identifier/${identifier}`,
    { name: `Resource ${label}`, version: 'v1', kind: 'service', variables: { region: 'eu' } },
    202,
  );
  const takenIdentifier = `taken-resource-${label}`;
  await write(
    'put',
    `/resources/identifier/${takenIdentifier}`,
    { name: 'Taken', version: 'v1', kind: 'service' },
    202,
  );
  const jobAgent = randomUUID();
  await write(
    'put',
    `/job-agents/${jobAgent}`,
    { name: `agent-${label}`, type: 'tfe', config: { token: 't' } },
    202,
  );
  const takenAgent = `taken-agent-${label}`;
  await write('put', `/job-agents/${randomUUID()}`, { name: takenAgent, type: 'http-pull' }, 202);
  const variable = randomUUID();
  const variables = `/deployments/${deployment.id}/variables`;
  await write('put', `${variables}/${variable}`, { key: `KEY_${label}`, default_value: 'default' }, 202);
  const takenKey = `TAKEN_${label}`;
  await write('put', `${variables}/${randomUUID()}`, { key: takenKey }, 202);
  const value = randomUUID();
  await write('put', `${variables}/${variable}/values/${value}`, { priority: 1, value: 'mine' }, 202);
  const policy = await write(
    'post',
    '/policies',
    { name: `Policy ${label}`, rules: [{ anyApproval: { minApprovals: 1 } }] },
    202,
  );
  const { rules } = (await stack.http.get(`${base}/policies/${policy.id}`).set(workspace.auth)).body as {
    rules: { id: string }[];
  };
  const policySkip = await write(
    'post',
    '/policy-skips',
    { ruleId: rules[0]!.id, versionId: version.id, reason: `skip ${label}` },
    201,
  );
  const hold = await write(
    'post',
    '/holds',
    { selector: `resource.name == "no-such-${label}"`, effect: 'block', reason: `hold ${label}` },
    201,
  );
  const takenPolicy = await write('post', '/policies', { name: `Taken policy ${label}` }, 202);
  const webhook = await write(
    'post',
    '/webhooks',
    {
      url: 'https://hooks.example.com/seed',
      events: ['hold.applied'],
      secret: `seed-secret-${label}-0123456789`,
    },
    201,
  );

  return {
    workspaceId: workspace.id,
    system: system.id,
    environment: environment.id,
    spareEnvironment: spareEnvironment.id,
    environmentName: `env-${label}`,
    deployment: deployment.id,
    spareDeployment: spareDeployment.id,
    deploymentName: `Deployment ${label}`,
    version: version.id,
    resource: resource.id,
    identifier,
    jobAgent,
    variable,
    value,
    policy: policy.id,
    policyRule: rules[0]!.id,
    policySkip: policySkip.id,
    hold: hold.id,
    webhook: webhook.id,
    taken: {
      systemName: takenSystem.name!,
      systemSlug: takenSystem.slug!,
      environmentName: `spare-env-${label}`,
      deploymentName: `Spare deployment ${label}`,
      deploymentSlug: `spare-deployment-${label}`,
      versionTag: takenVersion.tag!,
      identifier: takenIdentifier,
      jobAgentName: takenAgent,
      variableKey: takenKey,
      policyName: takenPolicy.name!,
    },
  };
}

/** Reads of one workspace's records (by its own key): equal before and after means none changed. */
export async function readBack(stack: TestStack, workspace: WorkspaceAccess, r: Records): Promise<unknown[]> {
  const paths = [
    `/systems/${r.system}`,
    `/environments/${r.environment}`,
    `/deployments/${r.deployment}`,
    `/deployment-versions/${r.version}`,
    `/deployment-versions/${r.version}/dependencies`,
    `/resources/${r.resource}`,
    `/job-agents/${r.jobAgent}`,
    `/deployments/${r.deployment}/variables/${r.variable}`,
    `/policies/${r.policy}`,
    `/policy-skips/${r.policySkip}`,
    `/holds/${r.hold}`,
    `/webhooks/${r.webhook}`,
  ];
  const reads: unknown[] = [];
  for (const path of paths) {
    const res = await stack.http.get(`/v1/workspaces/${workspace.id}${path}`).set(workspace.auth);
    expect({ path, status: res.status }).toEqual({ path, status: 200 });
    reads.push(res.body);
  }
  return reads;
}

/**
 * One digest per table of the database (but `api_key`, whose last use a request records), in one query:
 * equal digests mean no insert, update or delete happened anywhere.
 */
export async function databaseDigest(stack: TestStack): Promise<Record<string, string>> {
  const connection = stack.orm.em.fork().getConnection();
  const tables = await connection.execute<{ name: string }[]>(
    `SELECT table_name AS name FROM information_schema.tables
      WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> 'api_key'
      ORDER BY table_name`,
  );
  const rows = await connection.execute<{ name: string; digest: string }[]>(
    tables
      .map(
        ({ name }) =>
          `SELECT '${name}' AS name, count(*) || ' rows, ' || md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) AS digest FROM "${name}" t`,
      )
      .join(' UNION ALL '),
  );
  return Object.fromEntries(rows.map(({ name, digest }) => [name, digest]));
}
