import { randomUUID } from 'node:crypto';
import { eventually } from '../../helpers/eventually';
import { agentKey, pullFixture } from '../../helpers/pull';
import { seedRecords } from '../../helpers/recordSeeds';
import { createOtherWorkspace } from '../../helpers/records';
import { startTestStack, type TestStack } from '../../helpers/stack';

interface AuditEvent {
  id: string;
  at: string;
  actor: { type: string; id: string; name: string };
  action: string;
  record: { type: string; id: string };
  requestId: string | null;
  changes: string[];
  details: Record<string, unknown>;
  deploymentId: string | null;
}

interface AuditPage {
  items: AuditEvent[];
  total: number;
}

/** Every write, and every decision the system takes, in the audit trail (docs/behaviour.md "Audit trail"). */
describe('audit trail', () => {
  let stack: TestStack;
  const ws = () => `/v1/workspaces/${stack.workspaceId}`;

  const ADMIN_TOKEN = 'audit-admin-token-0123456789';

  beforeAll(async () => {
    stack = await startTestStack({ adminToken: ADMIN_TOKEN });
  });
  afterAll(() => stack?.close());

  /** Every event of the workspace, newest first, read page by page with `after`. */
  async function allEvents(query = ''): Promise<AuditEvent[]> {
    const events: AuditEvent[] = [];
    let after: string | undefined;
    for (;;) {
      const res = await stack.http
        .get(`${ws()}/audit-events?limit=40${after ? `&after=${after}` : ''}${query}`)
        .set(stack.auth);
      expect(res.status).toBe(200);
      const page = res.body as AuditPage;
      events.push(...page.items);
      if (page.items.length < 40) return events;
      after = page.items.at(-1)!.id;
    }
  }

  it('records one write of every kind of record with its key as the actor, and no secret value', async () => {
    const secrets = [
      'hunter2-deployment-token',
      'hunter2-resource-password',
      'hunter2-webhook-secret-xyz',
      'hunter2-set-password',
    ];
    const records = await seedRecords(stack, { id: stack.workspaceId, auth: stack.auth });
    let request = 0;
    const write = async (method: 'post' | 'put' | 'patch' | 'delete', path: string, body?: object) => {
      const res = await stack.http[method](`${ws()}${path}`)
        .set(stack.auth)
        .set('x-request-id', `audit-${++request}`)
        .send(body);
      expect({ path, status: res.status < 300 }).toEqual({ path, status: true });
      return res.body as { id: string };
    };
    await write('put', `/deployments/${records.deployment}`, {
      name: 'Renamed',
      slug: 'renamed',
      jobAgents: [{ ref: 'github', config: { token: secrets[0] } }],
    });
    await write('patch', `/resources/identifier/${records.identifier}/variables`, {
      PASSWORD: { value: secrets[1], sensitive: true },
    });
    const webhook = await write('post', '/webhooks', {
      url: 'https://hooks.example.com/audit',
      events: ['release.created'],
      secret: secrets[2],
    });
    const variableSet = await write('post', '/variable-sets', {
      name: 'audit-set',
      priority: 1,
      selector: 'resource.kind == "service"',
      variables: [
        { key: 'REGION', value: 'eu' },
        { key: 'DB_PASSWORD', value: secrets[3], sensitive: true },
      ],
    });
    const rule = await write('post', '/relationship-rules', {
      name: 'audit database',
      reference: 'database',
      cel: 'to.kind == "database" && to.metadata["app"] == from.metadata["app"]',
    });
    const provider = await write('put', '/resource-providers', { name: 'audit-scanner' });
    await write('put', `/resource-providers/${provider.id}/set`, {
      resources: [
        {
          identifier: 'audit-scanned',
          name: 'audit-scanned',
          kind: 'node',
          version: 'v1',
          config: {},
          metadata: {},
        },
      ],
    });
    const runbook = await write('post', '/workflows', {
      name: 'Audit runbook',
      inputs: [],
      jobAgents: [{ name: 'run', ref: records.jobAgent, config: {}, selector: 'false' }],
    });
    const run = await write('post', `/workflows/${runbook.id}/runs`, { inputs: {} });
    await write('delete', `/holds/${records.hold}`);
    // The seeded policy asks an approval of every target: gone, the next test's release runs.
    await write('delete', `/policies/${records.policy}`);
    await write('delete', `/webhooks/${webhook.id}`);

    const events = await allEvents();
    const ids = events.map((event) => event.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort().reverse()).toEqual(ids);
    const text = JSON.stringify(events);
    for (const secret of secrets) expect(text).not.toContain(secret);
    expect(text).not.toContain('token-');
    expect(text).not.toContain('seed-secret-');

    const byKey = events.filter((event) => event.actor.type === 'key');
    expect(new Set(byKey.map((event) => event.actor.id)).size).toBe(1);
    const find = (action: string, recordId?: string) =>
      events.find(
        (event) => event.action === action && (recordId === undefined || event.record.id === recordId),
      );
    const expected: [string, string | undefined][] = [
      ['system.created', records.system],
      ['environment.created', records.environment],
      ['deployment.created', records.deployment],
      ['system.deployment_linked', records.system],
      ['version.created', records.version],
      ['version_dependency.updated', undefined],
      ['resource.created', records.resource],
      ['job_agent.created', records.jobAgent],
      ['variable.created', records.variable],
      ['variable_value.created', records.value],
      ['policy.created', records.policy],
      ['policy_skip.created', records.policySkip],
      ['hold.created', records.hold],
      ['hold.deleted', records.hold],
      ['policy.deleted', records.policy],
      ['webhook.deleted', webhook.id],
      ['deployment.updated', records.deployment],
      ['resource.variables_updated', undefined],
      ['webhook.created', webhook.id],
      ['variable_set.created', variableSet.id],
      ['relationship_rule.created', rule.id],
      ['resource_provider.created', provider.id],
      ['resource_provider.resources_set', provider.id],
      ['workflow.created', runbook.id],
      ['workflow_run.created', run.id],
    ];
    const missing = expected.filter(([action, id]) => find(action, id)?.actor.type !== 'key');
    expect(missing).toEqual([]);
    expect(find('deployment.updated', records.deployment)).toMatchObject({
      changes: ['jobAgents', 'name', 'slug'],
      requestId: 'audit-1',
      deploymentId: records.deployment,
    });
    expect(find('resource.variables_updated')!.changes).toEqual(['PASSWORD']);
    expect(find('webhook.created', webhook.id)!.changes).toEqual(['events', 'secret', 'url']);
  });

  it('writes the event of a resource upsert, a provider set and a version in the write’s own transaction, once', async () => {
    const resource = (body: object) =>
      stack.http
        .put(`${ws()}/resources/identifier/audit-tx-node`)
        .set(stack.auth)
        .send({ name: 'audit-tx-node', kind: 'node', version: 'v1', config: {}, metadata: {}, ...body });
    const created = await resource({});
    expect(created.status).toBe(202);
    const id = (created.body as { id: string }).id;
    // Each event of the record, and whether the transaction that wrote it (xmin) wrote the resource's row as it is now.
    const sameTransaction = async (recordId: string, resourceId: string) =>
      (
        await stack.orm.em
          .fork()
          .getConnection()
          .execute<{ action: string; same: boolean }[]>(
            `SELECT a.action, a.xmin = r.xmin AS same FROM audit_event a, resource r
              WHERE a.record_id = ? AND r.id = ? ORDER BY a.id`,
            [recordId, resourceId],
          )
      ).map((row) => `${row.action}${row.same ? '' : ' (another transaction)'}`);
    expect(await sameTransaction(id, id)).toEqual(['resource.created']);
    expect((await resource({ version: 'v2' })).status).toBe(202);
    expect((await sameTransaction(id, id)).at(-1)).toBe('resource.updated');

    const provider = await stack.http
      .put(`${ws()}/resource-providers`)
      .set(stack.auth)
      .send({ name: 'audit-tx-scanner' });
    const providerId = (provider.body as { id: string }).id;
    const set = await stack.http
      .put(`${ws()}/resource-providers/${providerId}/set`)
      .set(stack.auth)
      .send({
        resources: [
          {
            identifier: 'audit-tx-scanned',
            name: 'scanned',
            kind: 'node',
            version: 'v1',
            config: {},
            metadata: {},
          },
        ],
      });
    expect(set.status).toBe(202);
    const scanned = await stack.http.get(`${ws()}/resources/identifier/audit-tx-scanned`).set(stack.auth);
    expect(await sameTransaction(providerId, (scanned.body as { id: string }).id)).toEqual([
      'resource_provider.created (another transaction)',
      'resource_provider.resources_set',
    ]);

    // A version that is not ready: nothing rolls out, so its row stays as its creation wrote it.
    const deployment = await stack.http
      .post(`${ws()}/deployments`)
      .set(stack.auth)
      .send({ name: 'Audit tx', slug: 'audit-tx' });
    const deploymentId = (deployment.body as { id: string }).id;
    const version = await stack.http
      .post(`${ws()}/deployments/${deploymentId}/versions`)
      .set(stack.auth)
      .send({ tag: 'v-audit-tx', status: 'building' });
    expect(version.status).toBe(200);
    const versionId = (version.body as { id: string }).id;
    const versionEvents = await stack.orm.em
      .fork()
      .getConnection()
      .execute<{ action: string; same: boolean }[]>(
        `SELECT a.action, a.xmin = v.xmin AS same FROM audit_event a, deployment_version v
          WHERE a.record_id = ? AND v.id = ?`,
        [versionId, versionId],
      );
    expect(versionEvents).toEqual([{ action: 'version.created', same: true }]);
  });

  it('records the system’s decisions and the agent’s claim and report, as theirs', async () => {
    const fixture = await pullFixture(stack, 'audit-agent');
    const job = fixture.jobs[0]!;
    const key = await agentKey(stack, fixture.agentId);
    const claim = await stack.http
      .post(`${ws()}/job-agents/${fixture.agentId}/jobs/${job.id}/claim`)
      .set({ 'x-api-key': key });
    expect(claim.status).toBe(200);
    const report = await stack.http
      .put(`${ws()}/jobs/${job.id}/status`)
      .set({ 'x-api-key': key })
      .send({ status: 'successful', message: 'done' });
    expect(report.status).toBe(202);

    const events = await eventually(
      async () => {
        const found = await allEvents(
          `&cel=${encodeURIComponent(`event.deploymentId == "${fixture.deploymentId}"`)}`,
        );
        return found.some((event) => event.action === 'release.succeeded') ? found : undefined;
      },
      { what: 'the release to succeed', timeoutMs: 30_000 },
    );
    const of = (action: string) => events.filter((event) => event.action === action);
    expect(of('release.created')).toEqual([
      expect.objectContaining({
        actor: expect.objectContaining({ type: 'system' }),
        record: { type: 'release', id: job.releaseId },
      }),
    ]);
    expect(of('job.claimed')).toEqual([
      expect.objectContaining({ actor: expect.objectContaining({ type: 'agent', id: fixture.agentId }) }),
    ]);
    const moves = of('job.status_changed').map((event) => [
      event.actor.type,
      event.details.from,
      event.details.to,
    ]);
    expect(moves).toEqual([
      ['agent', 'in_progress', 'successful'],
      ['agent', 'queued', 'in_progress'],
    ]);
    expect(of('release.succeeded')[0]!.actor.type).toBe('system');

    const agents = await allEvents(`&cel=${encodeURIComponent('event.actor.type == "agent"')}`);
    expect(agents.length).toBeGreaterThanOrEqual(3);
    expect(agents.every((event) => event.actor.type === 'agent')).toBe(true);
  });

  it('records the operator’s writes with the admin token as the actor, in the workspace written', async () => {
    const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };
    const created = await stack.http
      .post('/v1/admin/workspaces')
      .set(admin)
      .send({ name: 'Audited team' })
      .expect(201);
    const key = await stack.http
      .post(`/v1/admin/workspaces/${created.body.id}/api-keys`)
      .set(admin)
      .send({ name: 'ci' })
      .expect(201);
    const page = (
      await stack.http
        .get(`/v1/workspaces/${created.body.id}/audit-events`)
        .set('x-api-key', key.body.key as string)
        .expect(200)
    ).body as AuditPage;
    expect(page.items.map((event) => [event.action, event.actor])).toEqual([
      ['api_key.created', { type: 'key', id: 'admin', name: 'operator' }],
      ['workspace.created', { type: 'key', id: 'admin', name: 'operator' }],
    ]);
    expect(JSON.stringify(page)).not.toContain(key.body.key as string);
  });

  it('keeps each workspace’s trail to itself and refuses a bad filter', async () => {
    const other = await createOtherWorkspace(stack, 'Audit neighbour');
    const theirs = await stack.http.get(`${ws()}/audit-events`).set(other.auth);
    expect(theirs.status).toBe(404);
    await stack.http
      .post(`/v1/workspaces/${other.id}/systems`)
      .set(other.auth)
      .send({ name: 'Theirs' })
      .expect(202);
    const own = (await stack.http.get(`/v1/workspaces/${other.id}/audit-events`).set(other.auth))
      .body as AuditPage;
    expect(own.items.map((event) => event.action)).toEqual(['system.created']);
    const bad = await stack.http
      .get(`${ws()}/audit-events?cel=${encodeURIComponent('event.nope == 1')}`)
      .set(stack.auth);
    expect(bad.status).toBe(400);
    const cursor = await stack.http.get(`${ws()}/audit-events?after=${randomUUID()}&limit=5`).set(stack.auth);
    expect(cursor.status).toBe(200);
  });
});
