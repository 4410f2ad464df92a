import type { EntityManager } from '@mikro-orm/postgresql';
import { eventually } from '../../helpers/eventually';
import { recordsApi } from '../../helpers/orchestration';
import { createOtherWorkspace } from '../../helpers/records';
import { startTestStack, type TestStack } from '../../helpers/stack';

/** A runbook run as the API answers it, under Ctrlplane's names (`workflowId`: the runbook's id). */
interface RunbookRun {
  id: string;
  workflowId: string;
  inputs: Record<string, unknown>;
  status: string;
  jobs: { jobId: string; jobAgentId: string; resourceId: string | null; status: string }[];
}

/**
 * Runbooks, at Ctrlplane's `/workflows` paths (docs/api.md "Workflows"): CRUD by id and slug, runs that fan
 * out jobs routed by selector.
 */
describe('runbooks (the /workflows API)', () => {
  let stack: TestStack;
  let api: ReturnType<typeof recordsApi>;
  let runner: string;
  let puller: string;

  beforeAll(async () => {
    stack = await startTestStack();
    api = recordsApi(stack);
    runner = await api.agent('wf-runner', 'test-runner', { status: 'successful', delaySeconds: 0 });
    puller = await api.agent('wf-puller', 'http-pull');
    await api.resource('wf-db-1', 'Database', { tier: 'gold' });
    await api.resource('wf-db-2', 'Database', { tier: 'silver' });
    await api.resource('wf-web-1', 'Server', { tier: 'gold' });
  });
  afterAll(() => stack.close());

  const count = async (table: string) =>
    (
      await (stack.orm.em.fork() as EntityManager).execute<{ n: number }[]>(
        `SELECT count(*)::int AS n FROM ${table} WHERE workspace_id = ?`,
        [stack.workspaceId],
      )
    )[0]!.n;

  /** Starts a run of the runbook (201), answering it with its jobs. */
  const startRun = async (runbookId: string, inputs: object = {}) =>
    (await api.send('post', `/workflows/${runbookId}/runs`, { inputs }, [201])) as RunbookRun;

  const backup = (name: string, extra: object = {}) => ({
    name,
    inputs: [
      {
        key: 'targets',
        type: 'array',
        selector: { entityType: 'resource', default: 'resource.kind == "Database"' },
      },
      { key: 'reason', type: 'string' },
      { key: 'dryRun', type: 'boolean', default: false },
    ],
    jobAgents: [
      {
        name: 'run',
        ref: 'wf-runner',
        config: { message: 'backup {{ resource.name }} because {{ inputs.reason }}' },
        selector: 'resource.metadata["tier"] == "gold" || inputs.dryRun',
      },
      { name: 'collect', ref: puller, config: { token: 's3cr3t' }, selector: 'inputs.dryRun' },
    ],
    ...extra,
  });

  it('creates, reads by id and slug, lists, replaces and deletes a runbook', async () => {
    const created = await api.send('post', '/workflows', backup('Nightly backup'), [201]);
    expect(created).toMatchObject({ name: 'Nightly backup', slug: 'nightly-backup' });
    expect(created.jobAgents[1].config.token).toEqual({ sensitive: true });
    expect(await api.get(`/workflows/${created.id}`)).toMatchObject({ id: created.id });
    expect(await api.get('/workflows/slug/nightly-backup')).toMatchObject({ id: created.id });
    const page = await api.get<{ items: { id: string }[]; total: number }>('/workflows');
    expect(page.items.map((item) => item.id)).toContain(created.id);

    const clash = await stack.http
      .post(`${api.ws}/workflows`)
      .set(stack.auth)
      .send(backup('Other', { slug: 'nightly-backup' }));
    expect(clash.status).toBe(409);
    expect(clash.body).toMatchObject({
      code: 'DUPLICATE_SLUG',
      message: `Workflow ${created.id} already has the slug nightly-backup`,
      details: { slug: 'nightly-backup', existingWorkflowId: created.id },
    });

    const replaced = await api.send(
      'put',
      `/workflows/${created.id}`,
      { ...backup('Nightly backup v2'), slug: 'nightly-backup' },
      [202],
    );
    expect(replaced).toMatchObject({ id: created.id, name: 'Nightly backup v2', slug: 'nightly-backup' });

    const removed = await stack.http.delete(`${api.ws}/workflows/${created.id}`).set(stack.auth);
    expect(removed.status).toBe(202);
    expect((await stack.http.get(`${api.ws}/workflows/${created.id}`).set(stack.auth)).status).toBe(404);
  });

  it('refuses invalid runbooks and writes nothing', async () => {
    const before = await count('workflow');
    const bad = [
      backup('Bad fan-out default', {
        inputs: [{ key: 'resourceSelector', type: 'string', default: '((( not valid' }],
      }),
      backup('Bad CEL', { jobAgents: [{ name: 'x', ref: runner, config: {}, selector: 'inputs.' }] }),
      backup('Bad default', { inputs: [{ key: 'n', type: 'number', default: 'ten' }] }),
      backup('Bad selector default', {
        inputs: [
          {
            key: 'targets',
            type: 'array',
            selector: { entityType: 'resource', default: 'resource.knd == "x"' },
          },
        ],
      }),
      backup('Twice', {
        inputs: [
          { key: 'a', type: 'string' },
          { key: 'a', type: 'number' },
        ],
      }),
    ];
    for (const body of bad) {
      const res = await stack.http.post(`${api.ws}/workflows`).set(stack.auth).send(body);
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/problem\+json/);
    }
    expect(await count('workflow')).toBe(before);
  });

  it('runs: one job per selected resource whose entry matches, ended by the agents, the run succeeding', async () => {
    const runbook = await api.send('post', '/workflows', backup('Backup run'), [201]);
    const run = await startRun(runbook.id, { reason: 'audit' });
    expect(run).toMatchObject({ workflowId: runbook.id, inputs: { reason: 'audit', dryRun: false } });
    // Databases are selected by the default; only the gold one matches the runner's entry.
    expect(run.jobs).toHaveLength(1);
    expect(run.jobs[0]).toMatchObject({ jobAgentId: runner });
    const job = await api.get<{
      releaseId: string;
      workflowRunId: string;
      jobAgentConfig: Record<string, unknown>;
    }>(`/jobs/${run.jobs[0]!.jobId}`);
    expect(job).toMatchObject({ releaseId: '', workflowRunId: run.id });
    expect(job.jobAgentConfig.message).toBe('backup wf-db-1 because audit');

    const finished = await eventually(
      async () => {
        const runs = await api.get<{ items: RunbookRun[] }>(`/workflows/${runbook.id}/runs`);
        const found = runs.items.find((item) => item.id === run.id);
        return found?.status === 'succeeded' ? found : undefined;
      },
      { what: 'the run to succeed', timeoutMs: 30_000 },
    );
    expect(finished.jobs[0]!.status).toBe('successful');
  });

  it('runs by slug with a dry run: pull agents claim and report their jobs, secrets open only to them', async () => {
    await api.send('post', '/workflows', backup('Dry backup', { slug: 'dry-backup' }), [201]);
    const run = (await api.send(
      'post',
      '/workflows/slug/dry-backup/runs',
      { inputs: { reason: 'drill', dryRun: true, targets: 'resource.name == "wf-db-2"' } },
      [201],
    )) as RunbookRun;
    expect(run.jobs.map((job) => job.jobAgentId).sort()).toEqual([runner, puller].sort());
    const pulled = run.jobs.find((job) => job.jobAgentId === puller)!;
    expect(pulled.status).toBe('queued');

    const poll = await api.get<{
      items: { id: string; workflowRunId: string; resource: { identifier: string } }[];
    }>(`/job-agents/${puller}/jobs`);
    expect(poll.items).toContainEqual(
      expect.objectContaining({
        id: pulled.jobId,
        workflowRunId: run.id,
        resource: expect.objectContaining({ identifier: 'wf-db-2' }),
      }),
    );
    const claimed = await stack.http
      .post(`${api.ws}/job-agents/${puller}/jobs/${pulled.jobId}/claim`)
      .set(stack.auth);
    expect(claimed.status).toBe(200);
    expect(claimed.body.jobAgentConfig.token).toBe('s3cr3t');
    await api.report(pulled.jobId, 'failure', 'bucket missing');

    const finished = await eventually(
      async () => {
        const runs = await api
          .get<{ items: RunbookRun[] }>(`/workflows/slug/dry-backup`)
          .then((w) =>
            api.get<{ items: RunbookRun[] }>(`/workflows/${(w as unknown as { id: string }).id}/runs`),
          );
        const found = runs.items.find((item) => item.id === run.id);
        return found?.status === 'failed' ? found : undefined;
      },
      { what: 'the run to fail', timeoutMs: 30_000 },
    );
    expect(finished.jobs.find((job) => job.jobId === pulled.jobId)!.status).toBe('failure');
    const withRelease = await stack.http.get(`${api.ws}/jobs/${pulled.jobId}/with-release`).set(stack.auth);
    expect(withRelease.status).toBe(404);
  });

  it('cancels a run as a whole: a leased job is asked to stop, the rest end at once (docs/behaviour.md "Cancel")', async () => {
    const leaser = await api.agent('wf-leaser', 'http-pull', { leaseSeconds: 60, cancelGraceSeconds: 30 });
    const runbook = await api.send(
      'post',
      '/workflows',
      {
        name: 'Cancel me',
        inputs: [
          {
            key: 'targets',
            type: 'array',
            selector: { entityType: 'resource', default: 'resource.kind == "Database"' },
          },
        ],
        jobAgents: [{ name: 'work', ref: leaser, config: {} }],
      },
      [201],
    );
    const run = await startRun(runbook.id);
    expect(run.jobs).toHaveLength(2);
    const [held, waiting] = run.jobs as [RunbookRun['jobs'][number], RunbookRun['jobs'][number]];
    const claimed = await stack.http
      .post(`${api.ws}/job-agents/${leaser}/jobs/${held.jobId}/claim`)
      .set(stack.auth);
    expect(claimed.status).toBe(200);
    const claimId = claimed.body.claim_id as string;

    const cancelled = await api.send('post', `/workflows/${runbook.id}/runs/${run.id}/cancel`, {}, [200]);
    expect(cancelled.status).toBe('cancelled');
    const statuses = Object.fromEntries((cancelled as RunbookRun).jobs.map((job) => [job.jobId, job.status]));
    expect(statuses).toEqual({ [held.jobId]: 'in_progress', [waiting.jobId]: 'cancelled' });
    const beat = await stack.http
      .post(`${api.ws}/jobs/${held.jobId}/heartbeat`)
      .set(stack.auth)
      .send({ claim_id: claimId });
    expect(beat.body).toMatchObject({ cancelRequested: true, cancelDeadline: expect.any(String) });
    await stack.http
      .put(`${api.ws}/jobs/${held.jobId}/status`)
      .set(stack.auth)
      .send({ status: 'cancelled', claim_id: claimId })
      .expect(202);

    const again = await stack.http
      .post(`${api.ws}/workflows/${runbook.id}/runs/${run.id}/cancel`)
      .set(stack.auth);
    expect(again.status).toBe(409);
    expect(again.body.detail).toContain('cancelled');
    const runs = await api.get<{ items: RunbookRun[] }>(`/workflows/${runbook.id}/runs`);
    expect(runs.items.find((item) => item.id === run.id)!.status).toBe('cancelled');
  });

  it('refuses runs whose inputs do not fit, and writes nothing', async () => {
    const runbook = await api.send('post', '/workflows', backup('Strict inputs'), [201]);
    const runsBefore = await count('workflow_run');
    const jobsBefore = await count('job');
    for (const inputs of [
      {},
      { reason: 7 },
      { reason: 'x', extra: true },
      { reason: 'x', targets: 'resource.nope ==' },
    ]) {
      const res = await stack.http
        .post(`${api.ws}/workflows/${runbook.id}/runs`)
        .set(stack.auth)
        .send({ inputs });
      expect(res.status).toBe(400);
    }
    expect(await count('workflow_run')).toBe(runsBefore);
    expect(await count('job')).toBe(jobsBefore);
  });

  it('keeps workspaces apart: another workspace’s runbook is not found', async () => {
    const runbook = await api.send('post', '/workflows', backup('Private'), [201]);
    const other = await createOtherWorkspace(stack, 'wf-other');
    const otherWs = `/v1/workspaces/${other.id}`;
    const key = other.auth;
    expect((await stack.http.get(`${otherWs}/workflows/${runbook.id}`).set(key)).status).toBe(404);
    expect(
      (await stack.http.post(`${otherWs}/workflows/${runbook.id}/runs`).set(key).send({ inputs: {} })).status,
    ).toBe(404);
    // Naming our agent is only naming an agent that workspace does not have: saved, but no run starts it.
    const refToOurs = await stack.http
      .post(`${otherWs}/workflows`)
      .set(key)
      .send({ name: 'Steal', jobAgents: [{ name: 'x', ref: runner, config: {}, selector: 'true' }] });
    expect(refToOurs.status).toBe(201);
    const stolenRun = await stack.http
      .post(`${otherWs}/workflows/${refToOurs.body.id}/runs`)
      .set(key)
      .send({ inputs: {} });
    expect(stolenRun.status).toBe(400);
    expect(stolenRun.body.errors).toEqual([
      { path: 'jobAgents[0].ref', message: `no job agent ${runner} in this workspace` },
    ]);
  });

  it('saves an entry naming an agent not yet registered; a run refuses it until the agent exists', async () => {
    const runbook = await api.send(
      'post',
      '/workflows',
      {
        name: 'Later agent',
        inputs: [],
        jobAgents: [{ name: 'x', ref: 'wf-later', config: {}, selector: 'true' }],
      },
      [201],
    );
    const jobsBefore = await count('job');
    const early = await stack.http.post(`${api.ws}/workflows/${runbook.id}/runs`).set(stack.auth).send({});
    expect(early.status).toBe(400);
    expect(early.body).toMatchObject({
      code: 'workflow_not_runnable',
      errors: [{ path: 'jobAgents[0].ref', message: 'no job agent wf-later in this workspace' }],
    });
    expect(await count('job')).toBe(jobsBefore);
    const later = await api.agent('wf-later', 'test-runner', { status: 'successful', delaySeconds: 0 });
    const run = await startRun(runbook.id);
    expect(run.jobs).toEqual([expect.objectContaining({ jobAgentId: later, resourceId: null })]);
  });

  it("fans out over a string input keyed resourceSelector and routes by the entry's agent (Ctrlplane's convention)", async () => {
    const put = (id: string, serverUrl: string) =>
      api.send(
        'put',
        `/job-agents/${id}`,
        { name: `wf-argo-${id.slice(-2)}`, type: 'argo-cd', config: { serverUrl } },
        [202],
      );
    const prod = '0b8a4a3e-1f0c-4d6e-9a57-6a1d0f5b2c01';
    const staging = '0b8a4a3e-1f0c-4d6e-9a57-6a1d0f5b2c02';
    await put(prod, 'argocd-prod.example.com');
    await put(staging, 'argocd-staging.example.com');
    for (const [name, server] of [
      ['wf-app-a', 'argocd-prod.example.com'],
      ['wf-app-b', 'argocd-prod.example.com'],
      ['wf-app-c', 'argocd-staging.example.com'],
    ] as const)
      await api.send(
        'put',
        `/resources/identifier/${name}`,
        { name, kind: 'WfArgoApp', version: 'v1', config: { argo: { server: `https://${server}` } } },
        [202],
      );
    const routing = 'resource.config.argo.server.contains(jobAgent.config.serverUrl)';
    const runbook = await api.send(
      'post',
      '/workflows',
      {
        name: 'Delete Argo apps',
        inputs: [{ key: 'resourceSelector', type: 'string', default: "resource.kind == 'WfArgoApp'" }],
        jobAgents: [
          { name: 'prod', ref: prod, config: {}, selector: routing },
          { name: 'staging', ref: staging, config: {}, selector: routing },
        ],
      },
      [201],
    );
    const run = await startRun(runbook.id);
    expect(run.inputs).toEqual({ resourceSelector: "resource.kind == 'WfArgoApp'" });
    const perAgent = run.jobs.reduce<Record<string, number>>(
      (counts, job) => ({ ...counts, [job.jobAgentId]: (counts[job.jobAgentId] ?? 0) + 1 }),
      {},
    );
    expect(perAgent).toEqual({ [prod]: 2, [staging]: 1 });
    await api.send('post', `/workflows/${runbook.id}/runs/${run.id}/cancel`, {}, [200]);

    const invalid = await stack.http
      .put(`${api.ws}/workflows/${runbook.id}`)
      .set(stack.auth)
      .send({
        name: 'Delete Argo apps',
        inputs: [{ key: 'resourceSelector', type: 'string', default: '((( not valid' }],
        jobAgents: [],
      });
    expect(invalid.status).toBe(400);
    expect(invalid.body.errors).toEqual([
      { path: 'body.inputs[0].default', message: expect.stringMatching(/^invalid CEL/) },
    ]);
  });
});
