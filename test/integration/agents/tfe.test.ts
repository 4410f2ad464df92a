import { FakeTfe } from '../../fakes/tfe';
import { eventually } from '../../helpers/eventually';
import { recordsApi } from '../../helpers/orchestration';
import { pushAgents } from '../../helpers/push';
import { capturedLogger, startTestStack, type TestStack } from '../../helpers/stack';

/**
 * docs/behaviour.md "Job agent entry" (infrastructure workspace): the tfe agent renders the workspace from its
 * template, creates or updates it, writes the job's variables (sensitive ones marked sensitive),
 * starts a run and follows it, end to end against a fake Terraform Cloud. Every log line of the
 * API, the worker and Temporal's runtime is captured, and the secret must be in none of them.
 */
describe('the Terraform Cloud agent', () => {
  const TOKEN = 'tfe-token-for-tests';
  const SECRET = 'db-password-never-logged-7f3a';
  const TEMPLATE = `
name: "{{ deployment.slug }}-{{ environment.name }}"
terraform-version: "1.9.5"
working-directory: "stacks/{{ resource.metadata.stack }}"
auto-apply: true
description: "Flightdeck release {{ release.id }}"
`;
  let logs: () => string;
  let stack: TestStack;
  let tfe: FakeTfe;
  let agents: ReturnType<typeof pushAgents>;

  beforeAll(async () => {
    const captured = capturedLogger();
    logs = captured.text;
    stack = await startTestStack({ logger: captured.logger });
    tfe = await new FakeTfe(TOKEN).start();
    agents = pushAgents(stack, await recordsApi(stack).system('Terraform'));
  });
  afterAll(async () => {
    await tfe.close();
    await stack.close();
  });

  const deploy = (name: string) =>
    agents.deploy(
      name,
      'tfe',
      { organization: 'acme', template: TEMPLATE, address: tfe.url, token: TOKEN },
      {
        metadata: { stack: `${name}-stack` },
        variables: { REGION: 'eu-west-1', REPLICAS: 3, DB_PASSWORD: { secret: SECRET } },
      },
    );
  const runOf = (workspaceName: string) => {
    const workspace = tfe.workspaces.get(workspaceName);
    return tfe.runs.find((run) => run.workspaceId === workspace?.id);
  };

  it('creates the workspace, writes the variables with the secret marked sensitive, runs, and follows to applied', async () => {
    const { job } = await deploy('tf-ok');
    const triggered = await agents.waitForJob(
      job.id,
      (current) => current.externalId !== undefined,
      'the run',
    );
    const workspace = tfe.workspaces.get('svc-tf-ok-env-tf-ok')!;
    expect(workspace.attributes).toEqual({
      name: 'svc-tf-ok-env-tf-ok',
      'terraform-version': '1.9.5',
      'working-directory': 'stacks/tf-ok-stack',
      'auto-apply': true,
      description: `Flightdeck release ${job.releaseId}`,
    });
    const variables = tfe.variables.get(workspace.id)!.map(({ id: _id, ...variable }) => variable);
    expect(variables).toEqual(
      expect.arrayContaining([
        { key: 'REGION', value: 'eu-west-1', sensitive: false, category: 'terraform', hcl: false },
        { key: 'REPLICAS', value: '3', sensitive: false, category: 'terraform', hcl: false },
        { key: 'DB_PASSWORD', value: SECRET, sensitive: true, category: 'terraform', hcl: false },
      ]),
    );
    expect(variables).toHaveLength(3);
    const run = runOf('svc-tf-ok-env-tf-ok')!;
    expect(triggered.externalId).toBe(run.id);
    expect(run.message).toBe(`Flightdeck job ${job.id}: 1.0.0 to tf-ok-node`);
    expect(tfe.requestsTo('/api/v2/').every((request) => request.authorization === `Bearer ${TOKEN}`)).toBe(
      true,
    );

    tfe.setRunStatus(run.id, 'planning');
    await agents.waitForJob(job.id, (current) => current.status === 'in_progress', 'the run in progress');
    tfe.setRunStatus(run.id, 'applied');
    const done = await agents.waitForJob(job.id, (current) => current.status === 'successful', 'applied');
    expect(done.message).toBe(`Terraform run ${run.id}: applied`);
    expect(await agents.releaseEnds(job, 'succeeded')).toBe(job.releaseId);

    // The secret went to Terraform Cloud, marked sensitive, and nowhere else.
    expect(tfe.writtenValues).toContain(SECRET);
    expect(logs().length).toBeGreaterThan(0);
    expect(logs()).not.toContain(SECRET);
    expect(JSON.stringify(await agents.jobOf(job.id))).not.toContain(SECRET);
  }, 90_000);

  it('retries only the step that got a 500, fails on an errored run, and updates what exists for the next version', async () => {
    tfe.failNext('createRun', 500);
    const { job, agentId, deploymentId } = await deploy('tf-retry');
    await agents.waitForJob(job.id, (current) => current.externalId !== undefined, 'the run');
    const name = 'svc-tf-retry-env-tf-retry';
    const workspaceId = tfe.workspaces.get(name)!.id;
    const runCalls = (jobId: string) =>
      tfe.requestsTo('/api/v2/runs').filter((request) => JSON.stringify(request.body ?? {}).includes(jobId));
    // Each step is its own activity: the run was asked for twice, the workspace and variables once.
    expect(runCalls(job.id)).toHaveLength(2);
    const creates = tfe
      .requestsTo('/organizations/acme/workspaces')
      .filter((request) => request.method === 'POST' && JSON.stringify(request.body).includes(name));
    expect(creates).toHaveLength(1);
    expect(tfe.requestsTo(`/workspaces/${workspaceId}/vars`).filter((r) => r.method === 'POST')).toHaveLength(
      3,
    );
    tfe.setRunStatus(runOf(name)!.id, 'errored');
    await agents.waitForJob(job.id, (current) => current.status === 'failure', 'the failure');
    expect(await agents.releaseEnds(job, 'failed')).toBeNull();

    // The next version finds the workspace and its three variables, and updates them.
    await agents.api.version(deploymentId, '1.1.0');
    const next = await eventually(
      async () =>
        (await agents.api.jobs(`&jobAgentId=${agentId}`)).find((candidate) => candidate.id !== job.id),
      { what: 'the job of 1.1.0' },
    );
    await agents.waitForJob(next.id, (current) => current.externalId !== undefined, 'the second run');
    const updates = tfe
      .requestsTo(`/workspaces/${workspaceId}`)
      .filter((request) => request.method === 'PATCH');
    expect(updates).toHaveLength(4);
    expect(tfe.variables.get(workspaceId)).toHaveLength(3);
    expect(runCalls(next.id)).toHaveLength(1);
    expect(logs()).not.toContain(SECRET);
  }, 90_000);

  it('never starts a second run when the first was created but its answer was lost', async () => {
    tfe.loseNextAnswers('createRun');
    const { job } = await deploy('tf-lost');
    const linked = await agents.waitForJob(job.id, (current) => current.externalId !== undefined, 'the run');
    const workspace = tfe.workspaces.get('svc-tf-lost-env-tf-lost')!;
    const runs = tfe.runs.filter((run) => run.workspaceId === workspace.id);
    expect(runs).toHaveLength(1);
    expect(linked.externalId).toBe(runs[0]!.id);
    const creates = tfe
      .requestsTo('/api/v2/runs')
      .filter((request) => request.method === 'POST' && JSON.stringify(request.body).includes(job.id));
    expect(creates).toHaveLength(1);
  }, 90_000);

  it('cancels the Terraform run when the release is cancelled', async () => {
    const { job } = await deploy('tf-cancel');
    const linked = await agents.waitForJob(job.id, (current) => current.externalId !== undefined, 'the run');
    await agents.api.send('post', `/releases/${job.releaseId}/cancel`, {}, [202]);
    await agents.waitForJob(job.id, (current) => current.status === 'cancelled', 'the job cancelled');
    await eventually(() => tfe.requestsTo(`/runs/${linked.externalId}/actions/cancel`).length === 1, {
      what: 'the run cancel',
    });
    expect(runOf('svc-tf-cancel-env-tf-cancel')!.status).toBe('canceled');
  }, 90_000);
});
