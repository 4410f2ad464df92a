import { randomUUID } from 'node:crypto';
import { describeWithReference, ResponseValidator } from '../../helpers/ctrlplaneReference';
import { pullFixture, type PullFixture } from '../../helpers/pull';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * Ctrlplane's clients read our bodies (docs/api.md "Conventions"). Each operation's answer is validated
 * against the reference's response schema for that operation and status, relaxed only by SPEC_WINS
 * (test/helpers/ctrlplaneReference.ts).
 */
const ADMIN_TOKEN = 'bodies-admin-token-0123456789abcdef';

describeWithReference("response bodies against Ctrlplane's schemas", () => {
  let stack: TestStack;
  let agent: PullFixture;
  let validator: ResponseValidator;
  const ws = () => `/v1/workspaces/${stack.workspaceId}`;

  /** Calls the operation and expects its body to validate; prints every difference otherwise. */
  async function expectValidBody(operationId: string, path: string, status = 200): Promise<unknown> {
    const res = await stack.http.get(path).set(stack.auth);
    expect([operationId, res.status]).toEqual([operationId, status]);
    expect({ operationId, errors: validator.errors(operationId, status, res.body) }).toEqual({
      operationId,
      errors: [],
    });
    return res.body;
  }

  /** Sends a write and expects its answer's body to validate; answers the body. */
  async function expectValidAnswer(
    operationId: string,
    method: 'post' | 'put' | 'patch' | 'delete',
    path: string,
    body?: object,
    status = 202,
  ): Promise<Record<string, unknown>> {
    const res = await stack.http[method](path).set(stack.auth).send(body);
    expect([operationId, res.status, res.status === status ? '' : res.body]).toEqual([
      operationId,
      status,
      '',
    ]);
    expect({ operationId, errors: validator.errors(operationId, status, res.body) }).toEqual({
      operationId,
      errors: [],
    });
    return res.body as Record<string, unknown>;
  }

  beforeAll(async () => {
    validator = new ResponseValidator();
    stack = await startTestStack({ adminToken: ADMIN_TOKEN });
    agent = await pullFixture(stack, 'bodies', { resources: 2, variables: { REGION: 'eu-west-1' } });
  });
  afterAll(() => stack.close());

  it('tells a body that differs, with where and why', () => {
    const errors = validator.errors('getJobs', 200, {
      items: [{ id: agent.jobs[0]!.id, status: 'queued' }],
      total: 1,
      limit: 50,
      offset: 0,
    });
    expect(errors).toEqual(expect.arrayContaining([expect.stringMatching(/^\/items\/0 must have required/)]));
  });

  it('answers jobs with their release, deployment, environment and resource', async () => {
    await expectValidBody('getJobWithRelease', `${ws()}/jobs/${agent.jobs[0]!.id}/with-release`);
    const body = (await expectValidBody('getJobs', `${ws()}/jobs`)) as {
      items: { job: { id: string }; release: { id: string }; resource: { identifier: string } }[];
    };
    expect(body.items.map((item) => item.job.id).sort()).toEqual(agent.jobs.map((job) => job.id).sort());
    expect(body.items.map((item) => item.resource.identifier).sort()).toEqual([
      'bodies-node-0',
      'bodies-node-1',
    ]);
  });

  it("answers a job by id as Ctrlplane's Job, its verifications beside its fields", async () => {
    const job = agent.jobs[0]!;
    const body = (await expectValidBody('getJob', `${ws()}/jobs/${job.id}`)) as Record<string, unknown>;
    expect(body).toMatchObject({ id: job.id, releaseId: job.releaseId, status: 'queued', verifications: [] });
    expect(body).not.toHaveProperty('job');
  });

  it("answers an agent's jobs and a release target's jobs as Ctrlplane's jobs", async () => {
    await expectValidBody('listJobAgentJobs', `${ws()}/job-agents/${agent.agentId}/jobs`);
    const job = agent.jobs[0]!;
    const key = `${job.resourceId}-${job.environmentId}-${job.deploymentId}`;
    const body = (await expectValidBody(
      'getJobsForReleaseTarget',
      `${ws()}/release-targets/${key}/jobs`,
    )) as {
      items: { id: string }[];
    };
    expect(body.items.map((item) => item.id)).toEqual([job.id]);
  });

  it("answers releases as Ctrlplane's Release: a release by id, a target's desired release and its state", async () => {
    const job = agent.jobs[0]!;
    const release = (await expectValidBody('getRelease', `${ws()}/releases/${job.releaseId}`)) as {
      id: string;
      version: { id: string; tag: string };
      variables: Record<string, unknown>;
      releaseTarget: { resourceId: string };
    };
    expect(release).toMatchObject({
      id: job.releaseId,
      variables: { REGION: 'eu-west-1' },
      releaseTarget: { resourceId: job.resourceId },
    });
    const key = `${job.resourceId}-${job.environmentId}-${job.deploymentId}`;
    const desired = (await expectValidBody(
      'getReleaseTargetDesiredRelease',
      `${ws()}/release-targets/${key}/desired-release`,
    )) as { desiredRelease: { id: string; version: { id: string } } };
    expect(desired.desiredRelease).toMatchObject({ id: job.releaseId, version: { id: release.version.id } });
    const state = (await expectValidBody(
      'getReleaseTargetState',
      `${ws()}/release-targets/${key}/state`,
    )) as {
      desiredRelease: { id: string };
      latestJob: { job: { id: string } };
    };
    expect(state).toMatchObject({
      desiredRelease: { id: job.releaseId },
      latestJob: { job: { id: job.id } },
    });
    expect(state).not.toHaveProperty('currentRelease');

    const res = await stack.http
      .post(`${ws()}/release-targets/state`)
      .set(stack.auth)
      .send({ deploymentId: job.deploymentId, environmentId: job.environmentId });
    expect(res.status).toBe(200);
    expect(validator.errors('getReleaseTargetStates', 200, res.body)).toEqual([]);
    const listed = res.body as {
      items: { releaseTarget: { resourceId: string }; state: { latestJob: { id: string } } }[];
    };
    expect(listed.items.map((item) => item.state.latestJob.id).sort()).toEqual(
      agent.jobs.map((j) => j.id).sort(),
    );
  });

  it('answers the workspace list as a WorkspaceList', async () => {
    const body = (await expectValidBody('listWorkspaces', '/v1/workspaces')) as {
      workspaces: { id: string }[];
      total: number;
    };
    expect(body.workspaces.map((workspace) => workspace.id)).toEqual([stack.workspaceId]);
    expect(body.total).toBe(1);
  });

  it('answers creations and upserts with their id and a message', async () => {
    const system = await expectValidAnswer('requestSystemCreation', 'post', `${ws()}/systems`, {
      name: 'Answers',
    });
    expect(system).toMatchObject({ name: 'Answers', message: expect.any(String) });
    const systemId = system.id as string;
    await expectValidAnswer('requestSystemUpsert', 'put', `${ws()}/systems/${systemId}`, {
      name: 'Answers',
      description: 'answered',
    });

    const environment = await expectValidAnswer(
      'requestEnvironmentCreation',
      'post',
      `${ws()}/environments`,
      {
        name: 'answers-env',
        resourceSelector: 'resource.metadata["pool"] == "answers"',
      },
    );
    const environmentId = environment.id as string;
    await expectValidAnswer('requestEnvironmentUpsert', 'put', `${ws()}/environments/${environmentId}`, {
      name: 'answers-env',
    });
    await expectValidAnswer(
      'linkEnvironmentToSystem',
      'put',
      `${ws()}/systems/${systemId}/environments/${environmentId}`,
    );

    const deployment = await expectValidAnswer('requestDeploymentCreation', 'post', `${ws()}/deployments`, {
      name: 'Answers',
      slug: 'answers',
    });
    const deploymentId = deployment.id as string;
    await expectValidAnswer('requestDeploymentUpsert', 'put', `${ws()}/deployments/${deploymentId}`, {
      name: 'Answers',
      slug: 'answers',
      description: 'answered',
    });
    await expectValidAnswer(
      'linkDeploymentToSystem',
      'put',
      `${ws()}/systems/${systemId}/deployments/${deploymentId}`,
    );

    const jobAgentId = randomUUID();
    await expectValidAnswer('requestJobAgentUpsert', 'put', `${ws()}/job-agents/${jobAgentId}`, {
      name: 'answers-agent',
      type: 'http-pull',
      config: {},
    });
    await expectValidAnswer(
      'upsertResourceByIdentifier',
      'put',
      `${ws()}/resources/identifier/answers-node`,
      {
        name: 'answers-node',
        version: 'v1',
        kind: 'service',
        metadata: { pool: 'answers' },
      },
    );
    await expectValidAnswer(
      'requestResourceVariablesUpdate',
      'patch',
      `${ws()}/resources/identifier/answers-node/variables`,
      { REGION: 'eu-west-1' },
    );

    const versions = await stack.http
      .get(`${ws()}/deployments/${agent.deploymentId}/versions`)
      .set(stack.auth);
    const versionId = (versions.body as { items: { id: string }[] }).items[0]!.id;
    const variableId = randomUUID();
    await expectValidAnswer(
      'requestDeploymentVariableUpdate',
      'put',
      `${ws()}/deployment-variables/${variableId}`,
      {
        deploymentId,
        key: 'REGION',
        defaultValue: 'eu',
      },
    );
    const valueId = randomUUID();
    await expectValidAnswer(
      'requestDeploymentVariableValueUpsert',
      'put',
      `${ws()}/deployment-variable-values/${valueId}`,
      { deploymentVariableId: variableId, priority: 1, value: 'us' },
    );
    await expectValidAnswer(
      'requestDeploymentVersionDependencyUpsert',
      'put',
      `${ws()}/deployment-versions/${versionId}/dependencies/${deploymentId}`,
      { versionSelector: 'version.tag != ""' },
    );
    await expectValidAnswer(
      'requestUserApprovalRecordUpsert',
      'put',
      `${ws()}/deployment-versions/${versionId}/user-approval-records`,
      { status: 'approved', environmentIds: [agent.jobs[0]!.environmentId] },
    );

    // Read back, then taken apart in the reverse order.
    await expectValidBody('getDeploymentVariable', `${ws()}/deployment-variables/${variableId}`);
    await expectValidBody('getDeploymentVariableValue', `${ws()}/deployment-variable-values/${valueId}`);
    const deletions: [string, string][] = [
      [
        'requestDeploymentVersionDependencyDeletion',
        `/deployment-versions/${versionId}/dependencies/${deploymentId}`,
      ],
      ['requestDeploymentVariableValueDeletion', `/deployment-variable-values/${valueId}`],
      ['requestDeploymentVariableDeletion', `/deployment-variables/${variableId}`],
      ['requestJobAgentDeletion', `/job-agents/${jobAgentId}`],
      ['unlinkDeploymentFromSystem', `/systems/${systemId}/deployments/${deploymentId}`],
      ['unlinkEnvironmentFromSystem', `/systems/${systemId}/environments/${environmentId}`],
      ['requestDeploymentDeletion', `/deployments/${deploymentId}`],
      ['requestEnvironmentDeletion', `/environments/${environmentId}`],
      ['requestSystemDeletion', `/systems/${systemId}`],
    ];
    // Ctrlplane's document gives this delete 202, its own clients and e2e suite expect 200 (docs/api.md
    // "Conventions"): 200, with the body the document gives.
    const byIdentifier = await stack.http.delete(`${ws()}/resources/identifier/answers-node`).set(stack.auth);
    expect(byIdentifier.status).toBe(200);
    expect(validator.errors('requestResourceDeletionByIdentifier', 202, byIdentifier.body)).toEqual([]);
    for (const [operationId, path] of deletions)
      await expectValidAnswer(operationId, 'delete', `${ws()}${path}`);
  });

  it('answers the records as Ctrlplane shows them, leaving out what they do not have', async () => {
    const job = agent.jobs[0]!;
    const deployment = (await expectValidBody(
      'getDeployment',
      `${ws()}/deployments/${job.deploymentId}`,
    )) as { deployment: { name: string } };
    await expectValidBody('getDeploymentByName', `${ws()}/deployments/name/${deployment.deployment.name}`);
    await expectValidBody('listDeployments', `${ws()}/deployments`);
    const environment = (await expectValidBody(
      'getEnvironment',
      `${ws()}/environments/${job.environmentId}`,
    )) as { name: string; systems: { id: string }[] };
    await expectValidBody('getEnvironmentByName', `${ws()}/environments/name/${environment.name}`);
    await expectValidBody('listEnvironments', `${ws()}/environments`);
    await expectValidBody('getSystem', `${ws()}/systems/${environment.systems[0]!.id}`);
    await expectValidBody('listSystems', `${ws()}/systems`);
    await expectValidBody('getResourceByIdentifier', `${ws()}/resources/identifier/bodies-node-0`);
    await expectValidBody('getAllResources', `${ws()}/resources`);
    await expectValidBody('listDeploymentVersions', `${ws()}/deployments/${job.deploymentId}/versions`);
    await expectValidBody('getJobAgent', `${ws()}/job-agents/${agent.agentId}`);
  });

  it('answers the other reads of the records as Ctrlplane shows them', async () => {
    const job = agent.jobs[0]!;
    const environment = (await stack.http.get(`${ws()}/environments/${job.environmentId}`).set(stack.auth))
      .body as { systems: { id: string }[] };
    const systemId = environment.systems[0]!.id;
    const reads: [string, string][] = [
      ['getWorkspace', `/v1/workspaces/${stack.workspaceId}`],
      ['listJobAgents', `${ws()}/job-agents`],
      ['getRelationshipRules', `${ws()}/relationship-rules`],
      ['listVariableSets', `${ws()}/variable-sets`],
      ['listWorkflows', `${ws()}/workflows`],
      ['listDeploymentVariablesByDeployment', `${ws()}/deployments/${job.deploymentId}/variables`],
      ['getDeploymentsForResource', `${ws()}/resources/identifier/bodies-node-0/deployments`],
      ['getVariablesForResource', `${ws()}/resources/identifier/bodies-node-0/variables`],
      [
        'getReleaseTargetForResourceInDeployment',
        `${ws()}/resources/bodies-node-0/release-targets/deployment/${job.deploymentId}`,
      ],
      ['getDeploymentSystemLink', `${ws()}/systems/${systemId}/deployments/${job.deploymentId}`],
      ['getEnvironmentSystemLink', `${ws()}/systems/${systemId}/environments/${job.environmentId}`],
    ];
    for (const [operationId, path] of reads) await expectValidBody(operationId, path);
  });

  it('answers the writes of rules, variable sets, workflows and providers as Ctrlplane does', async () => {
    const rule = { name: 'bodies db', reference: 'db', cel: 'to.kind == "db" && to.name == from.name' };
    const created = await expectValidAnswer(
      'createRelationshipRule',
      'post',
      `${ws()}/relationship-rules`,
      rule,
      201,
    );
    const rulePath = `${ws()}/relationship-rules/${created.id as string}`;
    await expectValidBody('getRelationshipRule', rulePath);
    await expectValidAnswer('requestRelationshipRuleUpsert', 'put', rulePath, { ...rule, description: 'db' });
    await expectValidAnswer('deleteRelationship', 'delete', rulePath);

    const set = { name: 'bodies set', selector: 'true', variables: [{ key: 'K', value: 'v' }] };
    const made = await expectValidAnswer('createVariableSet', 'post', `${ws()}/variable-sets`, set, 201);
    const setPath = `${ws()}/variable-sets/${made.id as string}`;
    await expectValidBody('getVariableSet', setPath);
    await expectValidAnswer('updateVariableSet', 'put', setPath, { ...set, description: 'bodies' });
    await expectValidAnswer('deleteVariableSet', 'delete', setPath);

    const workflow = await expectValidAnswer(
      'createWorkflow',
      'post',
      `${ws()}/workflows`,
      {
        name: 'Bodies flow',
        inputs: [{ key: 'reason', type: 'string' }],
        jobAgents: [{ name: 'run', ref: agent.agentId, config: {}, selector: 'true' }],
      },
      201,
    );
    const workflowPath = `${ws()}/workflows/${workflow.id as string}`;
    await expectValidBody('getWorkflow', workflowPath);
    await expectValidBody('getWorkflowBySlug', `${ws()}/workflows/slug/${workflow.slug as string}`);
    await expectValidAnswer(
      'createWorkflowRun',
      'post',
      `${workflowPath}/runs`,
      { inputs: { reason: 'x' } },
      201,
    );
    await expectValidAnswer(
      'createWorkflowRunBySlug',
      'post',
      `${ws()}/workflows/slug/${workflow.slug as string}/runs`,
      { inputs: { reason: 'y' } },
      201,
    );
    // A workflow whose run's jobs have not ended is kept (409): the one deleted has no run.
    const unused = await expectValidAnswer(
      'createWorkflow',
      'post',
      `${ws()}/workflows`,
      { name: 'Bodies unused', inputs: [], jobAgents: [] },
      201,
    );
    await expectValidAnswer('deleteWorkflow', 'delete', `${ws()}/workflows/${unused.id as string}`);

    const provider = await expectValidAnswer(
      'requestResourceProviderUpsert',
      'put',
      `${ws()}/resource-providers`,
      {
        id: '',
        name: 'bodies-scanner',
      },
    );
    await expectValidBody('getResourceProviderByName', `${ws()}/resource-providers/name/bodies-scanner`);
    await expectValidAnswer(
      'setResourceProviderResources',
      'put',
      `${ws()}/resource-providers/${provider.id as string}/set`,
      {
        resources: [
          {
            identifier: 'bodies-scanned',
            name: 'bodies-scanned',
            version: 'v1',
            kind: 'db',
            config: {},
            metadata: {},
          },
        ],
      },
    );
    await expectValidBody(
      'getResourceProviderResources',
      `${ws()}/resource-providers/name/bodies-scanner/resources`,
    );
    // A provider that still owns resources is kept (400): its set is emptied first.
    await expectValidAnswer(
      'setResourceProviderResources',
      'put',
      `${ws()}/resource-providers/${provider.id as string}/set`,
      { resources: [] },
    );
    await expectValidAnswer(
      'deleteResourceProviderByName',
      'delete',
      `${ws()}/resource-providers/name/bodies-scanner`,
    );
  });

  it('answers the lookups, previews and plans as Ctrlplane does', async () => {
    const job = agent.jobs[1]!;
    const key = `${job.resourceId}-${job.environmentId}-${job.deploymentId}`;
    const lookups: [string, string, object, number][] = [
      ['searchResources', `${ws()}/resources/search`, { kinds: ['service'] }, 200],
      [
        'previewReleaseTargetsForResource',
        `${ws()}/release-targets/resource-preview`,
        {
          name: 'Preview',
          version: 'v1',
          kind: 'service',
          identifier: 'bodies/preview',
          config: {},
          metadata: {},
        },
        200,
      ],
      ['listEligibleVersionsForReleaseTarget', `${ws()}/release-targets/${key}/eligible-versions`, {}, 200],
      [
        'createDeploymentPlan',
        `${ws()}/deployments/${job.deploymentId}/plan`,
        { version: { tag: 'planned' } },
        200,
      ],
    ];
    const answers: Record<string, Record<string, unknown>> = {};
    for (const [operationId, path, body, status] of lookups)
      answers[operationId] = await expectValidAnswer(operationId, 'post', path, body, status);
    await expectValidBody(
      'getDeploymentPlan',
      `${ws()}/deployments/${job.deploymentId}/plan/${answers.createDeploymentPlan!.id as string}`,
    );
    const versionId = (
      (await stack.http.get(`${ws()}/releases/${job.releaseId}`).set(stack.auth)).body as {
        versionId: string;
      }
    ).versionId;
    await expectValidBody(
      'listDeploymentVersionDependencies',
      `${ws()}/deployment-versions/${versionId}/dependencies`,
    );
    await expectValidAnswer(
      'claimJob',
      'post',
      `${ws()}/job-agents/${agent.agentId}/jobs/${job.id}/claim`,
      undefined,
      200,
    );
  });

  it('answers versions with their dependencies', async () => {
    const job = agent.jobs[0]!;
    const other = (
      await stack.http
        .post(`${ws()}/deployments`)
        .set(stack.auth)
        .send({ name: 'Bodies upstream', slug: 'bodies-upstream' })
        .expect(202)
    ).body as { id: string };
    const dependencies = { [other.id]: { versionSelector: 'version.tag.startsWith("v")' } };
    const created = await expectValidAnswer(
      'createDeploymentVersion',
      'post',
      `${ws()}/deployments/${job.deploymentId}/versions`,
      { tag: 'bodies-2', name: 'bodies-2', status: 'building', dependencies },
      200,
    );
    expect(created.dependencies).toEqual(dependencies);
    const updated = await expectValidAnswer(
      'requestDeploymentVersionUpdate',
      'patch',
      `${ws()}/deploymentversions/${created.id as string}`,
      { id: created.id, status: 'failed' },
    );
    expect(updated.dependencies).toEqual(dependencies);
    const elsewhere = await stack.http
      .patch(`${ws()}/deploymentversions/${created.id as string}`)
      .set(stack.auth)
      .send({ id: randomUUID(), name: 'moved' });
    expect(elsewhere.status).toBe(400);
    const listed = (await expectValidBody(
      'listDeploymentVersions',
      `${ws()}/deployments/${job.deploymentId}/versions`,
    )) as { items: { tag: string; dependencies: object }[] };
    expect(listed.items[0]).toMatchObject({ tag: 'bodies-2', dependencies });
    for (const item of listed.items) expect(item.dependencies).toEqual(expect.any(Object));
  });

  it('answers a deployment without a job agent selector with "", which it takes back as none', async () => {
    const created = await expectValidAnswer('requestDeploymentCreation', 'post', `${ws()}/deployments`, {
      name: 'Bodies round trip',
      slug: 'bodies-round-trip',
      jobAgents: [{ ref: agent.agentId, config: { image: 'round-trip:1' } }],
    });
    const deploymentId = created.id as string;
    const read = (await expectValidBody('getDeployment', `${ws()}/deployments/${deploymentId}`)) as {
      deployment: Record<string, unknown>;
    };
    expect(read.deployment.jobAgentSelector).toBe('');
    const { name, slug, jobAgents, jobAgentSelector, jobAgentConfig, metadata } = read.deployment;
    await expectValidAnswer('requestDeploymentUpsert', 'put', `${ws()}/deployments/${deploymentId}`, {
      name,
      slug,
      jobAgents,
      jobAgentSelector,
      jobAgentConfig,
      metadata,
    });
    const again = (await expectValidBody('getDeployment', `${ws()}/deployments/${deploymentId}`)) as {
      deployment: Record<string, unknown>;
    };
    expect(again.deployment).toMatchObject({ jobAgents, jobAgentSelector: '' });
  });

  it('answers policies with their rules as Ctrlplane shows them, and the deleted policy', async () => {
    const body = {
      name: 'bodies-policy',
      selector: 'deployment.name == "no such deployment"',
      rules: [{ retry: { maxRetries: 1 } }],
    };
    const created = await expectValidAnswer('requestPolicyCreation', 'post', `${ws()}/policies`, body);
    const policyId = created.id as string;
    const read = (await expectValidBody('getPolicy', `${ws()}/policies/${policyId}`)) as {
      rules: { id: string; policyId: string; createdAt: string }[];
    };
    expect(read.rules).toEqual([
      expect.objectContaining({ id: expect.any(String), policyId, createdAt: expect.any(String) }),
    ]);
    await expectValidBody('listPolicies', `${ws()}/policies`);
    // Sent back as read: the rules' policyId and createdAt are taken and ignored, their ids kept.
    const {
      id: _id,
      workspaceId: _workspaceId,
      createdAt: _createdAt,
      updatedAt: _updatedAt,
      ...input
    } = read as Record<string, unknown>;
    const upserted = await expectValidAnswer(
      'requestPolicyUpsert',
      'put',
      `${ws()}/policies/${policyId}`,
      input,
    );
    expect(upserted.rules).toEqual(read.rules);
    const deleted = await expectValidAnswer(
      'requestPolicyDeletion',
      'delete',
      `${ws()}/policies/${policyId}`,
    );
    expect(deleted).toMatchObject({ id: policyId, name: 'bodies-policy', rules: read.rules });
  });

  it("answers a workflow's taken slug with DUPLICATE_SLUG and the workflow that has it", async () => {
    const workflow = (slug: string) => ({
      name: slug,
      slug,
      jobAgents: [{ name: 'run', ref: agent.agentId }],
    });
    const first = await expectValidAnswer(
      'createWorkflow',
      'post',
      `${ws()}/workflows`,
      workflow('bodies-wf'),
      201,
    );
    const second = await expectValidAnswer(
      'createWorkflow',
      'post',
      `${ws()}/workflows`,
      workflow('bodies-wf-2'),
      201,
    );
    const details = { slug: 'bodies-wf', existingWorkflowId: first.id };
    const taken = await expectValidAnswer(
      'createWorkflow',
      'post',
      `${ws()}/workflows`,
      workflow('bodies-wf'),
      409,
    );
    expect(taken).toMatchObject({ code: 'DUPLICATE_SLUG', details });
    const renamed = await expectValidAnswer(
      'updateWorkflow',
      'put',
      `${ws()}/workflows/${second.id as string}`,
      workflow('bodies-wf'),
      409,
    );
    expect(renamed).toMatchObject({ code: 'DUPLICATE_SLUG', details });
  });

  it("answers the workspace administration's writes as Ctrlplane does", async () => {
    const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };
    const created = await stack.http
      .post('/v1/workspaces')
      .set(admin)
      .send({ name: 'Bodies', slug: 'bodies' });
    expect(created.status).toBe(201);
    expect(validator.errors('createWorkspace', 201, created.body)).toEqual([]);
    const { id, apiKey } = created.body as { id: string; apiKey: { key: string } };
    const path = `/v1/workspaces/${id}`;
    // A workspace is renamed with its own key; the operator deletes it.
    const renamed = await stack.http
      .patch(path)
      .set({ 'x-api-key': apiKey.key })
      .send({ name: 'Bodies renamed' });
    expect(renamed.status).toBe(200);
    expect(validator.errors('updateWorkspace', 200, renamed.body)).toEqual([]);
    const deleted = await stack.http.delete(path).set(admin).expect(204);
    // The reference's 204 has no body, and neither has ours.
    expect(() => validator.errors('deleteWorkspace', 204, deleted.body)).toThrow(/declares no JSON body/);
    expect(deleted.text).toBe('');
  });

  it('answers errors of the workspace operations with a message', async () => {
    const missing = await expectValidBody('getWorkspaceBySlug', '/v1/workspaces/slug/no-such-workspace', 404);
    expect(missing).toMatchObject({ message: expect.any(String) });
  });

  it("answers an agent's status report with its id and a message", async () => {
    const job = agent.jobs[1]!;
    await expectValidAnswer('requestJobStatusUpsert', 'put', `${ws()}/jobs/${job.id}/status`, {
      status: 'in_progress',
    });
  });
});
