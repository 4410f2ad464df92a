import type { EntityManager } from '@mikro-orm/postgresql';
import { Client } from 'pg';
import { enqueueOrchestration, enqueueTargetsAdded } from '../../db/outbox';
import type { OrchestrationMessage } from '../../domain/orchestration';
import { OutboxRelay } from '../../worker/outboxRelay';
import { eventually } from '../helpers/eventually';
import { startTestStack, type TestStack } from '../helpers/stack';

const start = (deploymentId: string, n: number): OrchestrationMessage => ({
  kind: 'release.start',
  release: {
    id: `${deploymentId}-${n}`,
    workspaceId: 'w',
    versionId: `${deploymentId}-v`,
    deploymentId,
    environmentId: 'e',
    resourceId: `r-${n}`,
  },
});

const message = (n: number): OrchestrationMessage => ({
  kind: 'version.ready',
  workspaceId: 'w',
  deploymentId: 'd',
  versionId: `v-${n}`,
});

describe('outbox relay', () => {
  let stack: TestStack;
  const outboxRows = async () =>
    (await stack.orm.em
      .fork()
      .getConnection()
      .execute('SELECT id, attempts, last_error FROM outbox ORDER BY id')) as {
      id: string;
      attempts: number;
      last_error: string | null;
    }[];
  const enqueue = (messages: OrchestrationMessage[]) =>
    (stack.orm.em.fork() as EntityManager).transactional(async (em) => {
      for (const m of messages) await enqueueOrchestration(em, m);
    });

  /** Release ids in the order a relay of four concurrent calls delivered them, once `count` were. */
  const relayStarts = async (count: number): Promise<string[]> => {
    const delivered: string[] = [];
    const relay = new OutboxRelay({
      databaseUrl: stack.db.url,
      logger: stack.logger,
      concurrency: 4,
      dispatch: async (m) => {
        delivered.push((m as { release: { id: string } }).release.id);
      },
    });
    await relay.start();
    try {
      await eventually(() => delivered.length >= count || undefined);
    } finally {
      await relay.stop();
    }
    return delivered;
  };

  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
  });
  afterAll(() => stack.close());
  afterEach(async () => {
    await stack.orm.em.fork().getConnection().execute('DELETE FROM outbox');
  });

  it('keeps what was committed while no relay ran, and delivers it once one starts', async () => {
    const version = await stack.http
      .post(`/v1/workspaces/${stack.workspaceId}/deployments`)
      .set(stack.auth)
      .send({ name: 'Billing', slug: 'billing' })
      .expect(202)
      .then((res) =>
        stack.http
          .post(`/v1/workspaces/${stack.workspaceId}/deployments/${res.body.id}/versions`)
          .set(stack.auth)
          .send({ tag: '1.0.0' })
          .expect(200),
      );
    expect(await outboxRows()).toHaveLength(1);

    await stack.startWorker();
    try {
      const rollout = await eventually(async () => {
        const res = await stack.http
          .get(`/v1/workspaces/${stack.workspaceId}/deployment-versions/${version.body.id}`)
          .set(stack.auth);
        return res.body.rollout?.status === 'completed' ? res.body.rollout : undefined;
      });
      expect(rollout.status).toBe('completed');
      expect(await outboxRows()).toHaveLength(0);
    } finally {
      await stack.stopWorker();
    }
  });

  it('keeps a message whose call failed, counting attempts, and retries it', async () => {
    await enqueue([message(1)]);
    let calls = 0;
    const relay = new OutboxRelay({
      databaseUrl: stack.db.url,
      logger: stack.logger,
      dispatch: async () => {
        calls += 1;
        throw new Error('Temporal is unavailable');
      },
    });
    await relay.drainBatch();
    await relay.stop();
    const [row] = await outboxRows();
    expect(calls).toBe(1);
    expect(row).toMatchObject({ attempts: 1, last_error: 'Temporal is unavailable' });

    // Not due yet: backoff moved it into the future, so an immediate drain leaves it alone.
    const retry = new OutboxRelay({
      databaseUrl: stack.db.url,
      logger: stack.logger,
      dispatch: async () => undefined,
    });
    expect(await retry.drainBatch()).toBe(0);
    await stack.orm.em.fork().getConnection().execute('UPDATE outbox SET available_at = now()');
    expect(await retry.drainBatch()).toBe(1);
    await retry.stop();
    expect(await outboxRows()).toHaveLength(0);
  });

  it('gives each message to one of several concurrent relays', async () => {
    const total = 600;
    await enqueue(Array.from({ length: total }, (_, n) => message(n)));
    const delivered: string[] = [];
    const relays = Array.from(
      { length: 3 },
      () =>
        new OutboxRelay({
          databaseUrl: stack.db.url,
          logger: stack.logger,
          batchSize: 50,
          dispatch: async (m) => {
            await new Promise((resolve) => setTimeout(resolve, 1));
            delivered.push((m as { versionId: string }).versionId);
          },
        }),
    );
    await Promise.all(relays.map((relay) => relay.start()));
    try {
      await eventually(
        () => delivered.length >= total && (outboxRows().then((rows) => rows.length === 0) as never),
      );
    } finally {
      await Promise.all(relays.map((relay) => relay.stop()));
    }
    expect(delivered).toHaveLength(total);
    expect(new Set(delivered).size).toBe(total);
  });

  it("takes release starts in fair shares by deployment: one fan-out's backlog holds no other deployment back", async () => {
    await enqueue(Array.from({ length: 300 }, (_, n) => start('big', n)));
    await enqueue([start('small', 0)]);
    const delivered = await relayStarts(301);
    // Served oldest first, the small deployment's one start would come last; in fair shares it is
    // in the first batch (8 starts: two per concurrent call).
    expect(delivered.indexOf('small-0')).toBeGreaterThanOrEqual(0);
    expect(delivered.indexOf('small-0')).toBeLessThan(8);
  });

  it('takes first turns only while more deployments wait than a batch holds, and every start once', async () => {
    const deployments = Array.from({ length: 20 }, (_, d) => `d${String(d).padStart(2, '0')}`);
    for (const deployment of deployments) await enqueue([0, 1, 2].map((n) => start(deployment, n)));
    const delivered = await relayStarts(60);
    // Batches of eight (two per concurrent call): while more than eight deployments wait, a batch
    // holds one start of eight of them, each that deployment's oldest.
    const deploymentOf = (id: string) => id.split('-')[0];
    expect(delivered.slice(0, 8).sort()).toEqual(deployments.slice(0, 8).map((d) => `${d}-0`));
    expect(new Set(delivered.slice(8, 16).map(deploymentOf)).size).toBe(8);
    expect(new Set(delivered).size).toBe(60);
    expect(delivered).toHaveLength(60);
  });

  it("joins a workspace's waiting target wake-up, unless a relay holds it, and keeps every workspace's own", async () => {
    const targetWakes = async () =>
      (await stack.orm.em
        .fork()
        .getConnection()
        .execute(
          `SELECT payload->>'workspaceId' AS workspace FROM outbox WHERE kind = 'targets.added' ORDER BY id`,
        )) as { workspace: string }[];
    const wake = (workspaceId: string) =>
      (stack.orm.em.fork() as EntityManager).transactional((em) => enqueueTargetsAdded(em, workspaceId));
    const [a, b] = ['0190a000-0000-7000-8000-00000000000a', '0190a000-0000-7000-8000-00000000000b'];
    for (let n = 0; n < 5; n++) await wake(a);
    await wake(b);
    expect(await targetWakes()).toEqual([{ workspace: a }, { workspace: b }]);

    // A relay holding the row (FOR UPDATE, about to signal and delete it) is not joined: the signal
    // it sends may come before this write commits, so the write adds its own.
    const holder = new Client({ connectionString: stack.db.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT id FROM outbox WHERE kind = 'targets.added' FOR UPDATE`);
      await wake(a);
      await holder.query('ROLLBACK');
    } finally {
      await holder.end();
    }
    expect(await targetWakes()).toEqual([{ workspace: a }, { workspace: b }, { workspace: a }]);
  });

  it("serves a version's rollout while target wake-ups wait on a slow call: they have a lane of their own", async () => {
    await enqueue([{ kind: 'targets.added', workspaceId: 'w' }]);
    await enqueue([message(1)]);
    const started: string[] = [];
    let release: () => void = () => undefined;
    const slowSignal = new Promise<void>((resolve) => (release = resolve));
    const relay = new OutboxRelay({
      databaseUrl: stack.db.url,
      logger: stack.logger,
      dispatch: async (m) => {
        if (m.kind === 'targets.added') await slowSignal;
        else started.push(m.kind);
      },
    });
    await relay.start();
    try {
      await eventually(() => started.includes('version.ready') || undefined, {
        what: 'the version rollout, while the wake-up still waits',
      });
    } finally {
      release();
      await relay.stop();
    }
  });
});
