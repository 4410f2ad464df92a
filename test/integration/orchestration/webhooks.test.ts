import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { temporal } from '@temporalio/proto';
import { workflowIds } from '../../../workflows/ids';
import { eventually } from '../../helpers/eventually';
import { recordsApi } from '../../helpers/orchestration';
import { agentKey } from '../../helpers/pull';
import { createOtherWorkspace } from '../../helpers/records';
import { startTestStack, type TestStack } from '../../helpers/stack';

interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A local receiver that can go down (its port refuses connections) and come back on the same port. */
class Receiver {
  readonly received: Received[] = [];
  private server?: http.Server;
  port = 0;

  async up(): Promise<void> {
    this.server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      req.on('end', () => {
        this.received.push({ headers: req.headers, body });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hooks`;
  }
}

interface Delivery {
  id: string;
  eventId: string;
  eventType: string;
  status: string;
  attempts: number;
  responseStatus: number | null;
  durationMs: number | null;
  attemptLog: { responseStatus: number | null; durationMs: number | null; error: string | null }[];
  redeliveryOf: string | null;
}

const SECRET = 'webhook-test-secret-0123456789';
const EVENTS = [
  'version.created',
  'release.created',
  'release.waiting',
  'approval.requested',
  'release.succeeded',
  'job.status_changed',
];

/** Signed webhooks, delivered at least once through a receiver's downtime (docs/behaviour.md "Webhooks"). */
describe('webhooks', () => {
  let stack: TestStack;
  let api: ReturnType<typeof recordsApi>;
  const receiver = new Receiver();

  beforeAll(async () => {
    // The receiver listens on loopback, which the webhooks' egress policy must allow.
    stack = await startTestStack({ webhookEgress: { allow: ['127.0.0.1/32'], deny: [] } });
    api = recordsApi(stack);
    await receiver.up();
  });
  afterAll(async () => {
    await receiver.down();
    await stack?.close();
  });

  it('refuses bad settings and never answers the secret', async () => {
    const bad = [
      { url: 'ftp://example.com/x', events: ['release.created'], secret: SECRET },
      { url: 'https://user:pass@example.com/x', events: ['release.created'], secret: SECRET },
      { url: 'https://example.com/x', events: ['release.exploded'], secret: SECRET },
      { url: 'https://example.com/x', events: [], secret: SECRET },
      { url: 'https://example.com/x', events: ['release.created'], secret: 'short' },
    ];
    for (const body of bad) {
      const res = await stack.http.post(`${api.ws}/webhooks`).set(stack.auth).send(body);
      expect({ body, status: res.status, type: res.type }).toEqual({
        body,
        status: 400,
        type: 'application/problem+json',
      });
    }
    const created = await api.send(
      'post',
      '/webhooks',
      { url: receiver.url, events: ['hold.applied'], secret: SECRET },
      [201],
    );
    expect(created).not.toHaveProperty('secret');
    expect(JSON.stringify(await api.get(`/webhooks/${created.id}`))).not.toContain(SECRET);
    const other = await createOtherWorkspace(stack, 'Webhook neighbour');
    await stack.http.get(`/v1/workspaces/${other.id}/webhooks/${created.id}`).set(other.auth).expect(404);
    await stack.http.delete(`${api.ws}/webhooks/${created.id}`).set(stack.auth).expect(202);
  });

  it('signs every event, retries each while the receiver is down, and delivers each once it is back', async () => {
    const webhook = await api.send(
      'post',
      '/webhooks',
      { url: receiver.url, events: EVENTS, secret: SECRET },
      [201],
    );
    const agentId = await api.agent('hook-puller', 'http-pull');
    const system = await api.system('hooks');
    await api.environment('hook-open', 'resource.metadata["lane"] == "open"', system);
    await api.environment('hook-gated', 'resource.metadata["lane"] == "gated"', system);
    await api.policy({
      name: 'hook approvals',
      selector: 'environment.name == "hook-gated"',
      rules: [{ anyApproval: { minApprovals: 1 } }],
    });
    await api.resource('hook-a', 'service', { lane: 'open' });
    await api.resource('hook-b', 'service', { lane: 'gated' });
    const deployment = await api.deployment('hooked', system, { jobAgents: [{ ref: 'hook-puller' }] });

    await receiver.down();
    await api.version(deployment, '1.0.0');
    // Deliveries retry while the receiver is down: the stack does not settle, so wait for the job itself.
    const [job] = await eventually(
      async () => {
        const jobs = await api.jobs(`&deploymentId=${deployment}&status=queued`);
        return jobs.length > 0 ? jobs : undefined;
      },
      { what: 'the open job' },
    );
    const key = await agentKey(stack, agentId);
    await stack.http
      .post(`${api.ws}/job-agents/${agentId}/jobs/${job!.id}/claim`)
      .set({ 'x-api-key': key })
      .expect(200);
    await stack.http
      .put(`${api.ws}/jobs/${job!.id}/status`)
      .set({ 'x-api-key': key })
      .send({ status: 'successful' })
      .expect(202);
    await api.releaseWith(
      (r) => r.deploymentId === deployment && r.phase === 'succeeded',
      'the open release to succeed',
    );

    const audit = (
      await api.get<{ items: { id: string; action: string }[] }>(
        `/audit-events?limit=1000&cel=${encodeURIComponent(`event.deploymentId == "${deployment}"`)}`,
      )
    ).items.filter((event) => EVENTS.includes(event.action));
    expect(new Set(audit.map((event) => event.action))).toEqual(new Set(EVENTS));

    // Every event was tried while the receiver was down and waits to be tried again: its delivery
    // workflow's attempt failed and is scheduled again (Temporal retries it with backoff,
    // workflows/webhookDelivery.ts), and the delivery log says so.
    const SCHEDULED = temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED;
    const retrying = await eventually(
      async () => {
        const { items } = await api.get<{ items: Delivery[] }>(
          `/webhooks/${webhook.id}/deliveries?limit=100`,
        );
        if (items.length < audit.length) return undefined;
        const deliveries = [];
        for (const delivery of items) {
          const { raw } = await stack.temporal.workflow
            .getHandle(workflowIds.webhookDelivery(delivery.id))
            .describe();
          const [next] = raw.pendingActivities ?? [];
          if (next?.state !== SCHEDULED || (next.attempt ?? 0) < 2) return undefined;
          deliveries.push({ delivery, lastFailure: next.lastFailure?.message });
        }
        return deliveries;
      },
      { what: 'every delivery to fail while the receiver is down and wait for its next attempt' },
    );
    expect(new Set(retrying.map(({ delivery }) => delivery.eventId))).toEqual(
      new Set(audit.map((event) => event.id)),
    );
    for (const { delivery, lastFailure } of retrying) {
      expect(lastFailure).toBe('failed');
      expect(delivery.status).toBe('pending');
      expect(delivery.attemptLog.length).toBeGreaterThan(0);
      for (const attempt of delivery.attemptLog)
        expect(attempt).toMatchObject({ responseStatus: null, durationMs: null, error: 'failed' });
    }
    await receiver.up();

    const received = await eventually(
      async () => {
        const ids = new Set(receiver.received.map((r) => (JSON.parse(r.body) as { id: string }).id));
        return audit.every((event) => ids.has(event.id)) ? receiver.received : undefined;
      },
      { what: 'every event at the receiver', timeoutMs: 90_000, intervalMs: 500 },
    );
    for (const { headers, body } of received) {
      const expected = `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;
      expect(headers['x-flightdeck-signature-256']).toBe(expected);
      const event = JSON.parse(body) as { id: string; type: string; workspaceId: string; data: object };
      expect(headers['x-flightdeck-event']).toBe(event.type);
      expect(event.workspaceId).toBe(stack.workspaceId);
    }
    const waiting = received
      .map((r) => JSON.parse(r.body) as { type: string; data: { rule?: { kind: string }; reason?: string } })
      .find((event) => event.type === 'release.waiting');
    expect(waiting?.data.rule?.kind).toBe('anyApproval');
    expect(waiting?.data.reason).toEqual(expect.any(String));

    const log = await api.get<{ items: Delivery[] }>(`/webhooks/${webhook.id}/deliveries?limit=100`);
    const first = log.items.find((delivery) => delivery.eventType === 'version.created')!;
    expect(first).toMatchObject({ status: 'delivered', responseStatus: 204 });
    expect(first.attempts).toBeGreaterThan(1);
    expect(first.attemptLog[0]).toMatchObject({ responseStatus: null, durationMs: null, error: 'failed' });
    expect(first.attemptLog.at(-1)).toMatchObject({ responseStatus: 204, error: null });

    const before = receiver.received.length;
    const again = await api.send(
      'post',
      `/webhooks/${webhook.id}/deliveries/${first.id}/redeliver`,
      {},
      [202],
    );
    expect(again).toMatchObject({ eventId: first.eventId, redeliveryOf: first.id });
    await eventually(async () => receiver.received.length > before, { what: 'the redelivery' });
    expect(JSON.parse(receiver.received.at(-1)!.body).id).toBe(first.eventId);
    await stack.http.delete(`${api.ws}/webhooks/${webhook.id}`).set(stack.auth).expect(202);
  }, 180_000);

  it.each([
    ['a private address', 'private', 'http://10.255.255.1/hooks'],
    // The agents' egress policy allows all of loopback; the webhooks' only the receiver's address.
    ['an address only the agents may reach', 'agents-only', 'http://127.0.0.2:9/hooks'],
  ])('never sends to %s, and logs no more than "refused by policy"', async (what, slug, url) => {
    const webhook = await api.send(
      'post',
      '/webhooks',
      { url, events: ['version.created'], secret: SECRET },
      [201],
    );
    const system = await api.system(`refused hooks ${what}`);
    await api.version(await api.deployment(`refused-hooks-${slug}`, system), '1.0.0');
    const delivery = await eventually(
      async () =>
        (await api.get<{ items: Delivery[] }>(`/webhooks/${webhook.id}/deliveries`)).items.find(
          (d) => d.status !== 'pending' || d.attempts > 0,
        ),
      { what: 'the delivery to be tried' },
    );
    expect(delivery).toMatchObject({ status: 'failed', attempts: 1 });
    expect(delivery.attemptLog).toEqual([
      { at: expect.any(String), responseStatus: null, durationMs: null, error: 'refused by policy' },
    ]);
    await stack.http.delete(`${api.ws}/webhooks/${webhook.id}`).set(stack.auth).expect(202);
  });
});

/**
 * docs/api.md "Webhooks": a workspace's deliveries per minute are capped, and its backlog never holds
 * another's.
 */
describe('webhook deliveries per workspace', () => {
  const CAP = 3;
  let stack: TestStack;
  const receiver = new Receiver();

  beforeAll(async () => {
    stack = await startTestStack({
      webhookEgress: { allow: ['127.0.0.1/32'], deny: [] },
      webhookDeliveriesPerMinute: CAP,
    });
    await receiver.up();
  });
  afterAll(async () => {
    await receiver.down();
    await stack?.close();
  });

  const eventIdsAt = (received: readonly Received[], workspaceId: string) =>
    received
      .map((r) => JSON.parse(r.body) as { id: string; workspaceId: string })
      .filter((event) => event.workspaceId === workspaceId)
      .map((event) => event.id);

  it('starts at most its cap a minute, keeps the rest waiting, and refuses a redelivery past it', async () => {
    const busy = recordsApi(stack);
    const hook = { url: receiver.url, events: ['version.created'], secret: SECRET };
    const busyHook = await busy.send('post', '/webhooks', hook, [201]);
    const busyDeployment = await busy.deployment('busy-hooks', await busy.system('busy hooks'));
    for (let n = 1; n <= 2 * CAP; n++) await busy.version(busyDeployment, `1.0.${n}`);

    const quietAccess = await createOtherWorkspace(stack, 'Quiet webhooks');
    const quiet = recordsApi({ ...stack, workspaceId: quietAccess.id, auth: quietAccess.auth });
    await quiet.send('post', '/webhooks', hook, [201]);
    await quiet.version(await quiet.deployment('quiet-hooks', await quiet.system('quiet hooks')), '1.0.0');

    // The quiet workspace's delivery, written after the busy one's backlog, is not held behind it.
    await eventually(
      async () =>
        eventIdsAt(receiver.received, quietAccess.id).length === 1 &&
        eventIdsAt(receiver.received, stack.workspaceId).length === CAP,
      { what: "the quiet workspace's delivery and the busy one's first deliveries", timeoutMs: 30_000 },
    );
    const log = await busy.get<{ items: Delivery[] }>(`/webhooks/${busyHook.id}/deliveries?limit=100`);
    const delivered = log.items.filter((d) => d.status === 'delivered');
    const waiting = log.items.filter((d) => d.status === 'pending');
    expect([delivered.length, waiting.length]).toEqual([CAP, CAP]);
    // Nothing was lost: the ones past the cap wait in the outbox, never tried.
    expect(waiting.every((d) => d.attempts === 0)).toBe(true);
    const [outbox] = await stack.orm.em
      .fork()
      .getConnection()
      .execute<{ n: number }[]>(
        `SELECT count(*)::int AS n FROM outbox WHERE kind = 'webhook.deliver' AND payload->>'workspaceId' = ?`,
        [stack.workspaceId],
      );
    expect(outbox!.n).toBe(CAP);

    const refused = await stack.http
      .post(`${busy.ws}/webhooks/${busyHook.id}/deliveries/${delivered[0]!.id}/redeliver`)
      .set(stack.auth)
      .send({});
    expect(refused.status).toBe(429);
    expect(refused.type).toBe('application/problem+json');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60);
    const after = await busy.get<{ items: Delivery[] }>(`/webhooks/${busyHook.id}/deliveries?limit=100`);
    expect(after.items).toHaveLength(2 * CAP);
  }, 60_000);
});
