import { Client, Connection } from '@temporalio/client';
import { ensureTemporalServer } from '../../../cli/temporalFull';
import { eventually } from '../../helpers/eventually';
import { startTestStack, type TestStack } from '../../helpers/stack';
import { startTestTemporalServer, type TestTemporalServer } from '../../helpers/temporalFull';

/**
 * The production-like path: a full Temporal server (not the dev server) persisting to PostgreSQL,
 * built from Go modules on first use (minutes), so it runs only when asked for.
 */
const enabled = process.env.TEMPORAL_FULL === '1';
const describeFull = enabled ? describe : describe.skip;
const title = enabled
  ? 'full Temporal server on PostgreSQL'
  : 'full Temporal server on PostgreSQL (skipped: set TEMPORAL_FULL=1 to build and run it)';

describeFull(title, () => {
  const log = (line: string) => process.stderr.write(`[temporal full] ${line}\n`);
  let full: TestTemporalServer | undefined;
  let stack: TestStack | undefined;

  beforeAll(async () => {
    // A cold build takes minutes on a 2-core machine; afterwards this is instant.
    await ensureTemporalServer(log);
  }, 30 * 60_000);

  beforeAll(async () => {
    const started = Date.now();
    full = await startTestTemporalServer(log);
    log(`started at ${full.server.address} in ${Date.now() - started} ms (databases created)`);
    stack = await startTestStack({ temporalAddress: full.server.address });
  }, 180_000);

  afterAll(async () => {
    await stack?.close();
    await full?.close();
  }, 60_000);

  let versionId: string;

  it('runs a version rollout on the worker runtime, findable by search attributes in SQL visibility', async () => {
    const ws = `/v1/workspaces/${stack!.workspaceId}`;
    const deployment = await stack!.http
      .post(`${ws}/deployments`)
      .set(stack!.auth)
      .send({ name: 'Checkout', slug: 'checkout' })
      .expect(202);
    const version = await stack!.http
      .post(`${ws}/deployments/${deployment.body.id}/versions`)
      .set(stack!.auth)
      .send({ tag: '1.0.0' })
      .expect(200);
    versionId = version.body.id;

    await eventually(
      async () => {
        const res = await stack!.http.get(`${ws}/deployment-versions/${versionId}`).set(stack!.auth);
        return res.body.rollout?.status === 'completed';
      },
      { what: 'the rollout to complete', timeoutMs: 60_000 },
    );
    const found = await eventually(
      async () => {
        const ids: string[] = [];
        for await (const execution of stack!.temporal.workflow.list({
          query: `FlightdeckVersionId = '${versionId}' AND ExecutionStatus = 'Completed'`,
        })) {
          ids.push(execution.workflowId);
        }
        return ids.length > 0 ? ids : undefined;
      },
      { what: 'the completed rollout in visibility', timeoutMs: 30_000 },
    );
    expect(found).toEqual([`version-rollout/${versionId}`]);
  });

  it('keeps workflow histories in PostgreSQL across a restart on the same databases', async () => {
    await stack!.stopWorker();
    const started = Date.now();
    const server = await full!.restart();
    log(`restarted on existing databases in ${Date.now() - started} ms`);

    const connection = await Connection.connect({ address: server.address });
    try {
      const client = new Client({ connection, namespace: server.namespace });
      // A restarted cluster answers its frontend before its history shards are owned again
      // ("Not enough hosts to serve the request"): ask until they are.
      const described = await eventually(
        () => client.workflow.getHandle(`version-rollout/${versionId}`).describe(),
        { what: 'the restarted server to describe the rollout', timeoutMs: 60_000, intervalMs: 500 },
      );
      expect(described.status.name).toBe('COMPLETED');
    } finally {
      await connection.close();
    }
  }, 180_000);
});
