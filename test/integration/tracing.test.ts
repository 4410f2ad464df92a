import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { Tracing } from '../../cli/tracing';
import { installTracing } from '../../cli/tracingProvider';
import { eventually } from '../helpers/eventually';
import { recordsApi } from '../helpers/orchestration';
import { startTestStack, type TestStack } from '../helpers/stack';

/**
 * One HTTP request's trace reaches the workflows and activities it caused: through the outbox row
 * (its trace context), the relay's workflow start (Temporal's client interceptor puts it in the
 * headers), the workflow and activity interceptors, and the outbox rows the rollout's activity
 * writes for the releases' starts.
 */
describe('tracing from an HTTP request to the activities it caused', () => {
  const exporter = new InMemorySpanExporter();
  let tracing: Tracing;
  let stack: TestStack;
  let api: ReturnType<typeof recordsApi>;
  let deploymentId: string;

  const spans = (): ReadableSpan[] => exporter.getFinishedSpans();
  const named = (name: string) => spans().filter((span) => span.name === name);
  const serverSpanOf = (requestId: string) =>
    eventually(
      () =>
        spans().find(
          (span) => span.kind === SpanKind.SERVER && span.attributes['flightdeck.request_id'] === requestId,
        ),
      { what: `the server span of request ${requestId}` },
    );

  beforeAll(async () => {
    tracing = installTracing('flightdeck-test', new SimpleSpanProcessor(exporter));
    stack = await startTestStack({ workflowSpans: tracing.workflowSpans });
    api = recordsApi(stack);
    await api.agent('runner', 'test-runner', { status: 'successful' });
    const system = await api.system('Shop');
    await api.environment('prod', 'resource.metadata["env"] == "prod"', system);
    deploymentId = await api.deployment('web', system, { jobAgents: [{ ref: 'runner' }] });
    for (const name of ['web-1', 'web-2']) await api.resource(name, 'service', { env: 'prod' });
    // The setup is settled before the version: its targets need no rollout (no version is ready), so
    // every release below is created, and its workflow started, by the version's own rollout.
    await eventually(
      async () => {
        const [row] = await stack.orm.em
          .getConnection()
          .execute<{ pending: number }[]>('SELECT count(*)::int AS pending FROM outbox');
        return row?.pending === 0 && named('StartWorkflow:targetRolloutWorkflow').length === 0;
      },
      { what: 'the setup to settle' },
    );
  });
  afterAll(async () => {
    await stack?.close();
    await tracing?.shutdown();
  });

  it('gives every workflow and activity span a version creation caused the request’s trace id', async () => {
    const response = await stack.http
      .post(`${api.ws}/deployments/${deploymentId}/versions`)
      .set(stack.auth)
      .send({ tag: '1.0.0' });
    expect(response.status).toBe(200);
    const versionId = response.body.id as string;
    const server = await serverSpanOf(response.headers['x-request-id']!);
    expect(server.name).toBe('POST /v1/workspaces/:workspaceId/deployments/:deploymentId/versions');
    expect(server.attributes['http.response.status_code']).toBe(200);
    const traceId = server.spanContext().traceId;

    const releases = await eventually(
      async () => {
        const found = await api.releases();
        return found.length === 2 && found.every((release) => release.phase === 'succeeded') && found;
      },
      { what: 'both releases to succeed', timeoutMs: 60_000 },
    );
    const workflowIds = [
      `version-rollout/${versionId}`,
      ...releases.map((release) => `release/${release.id}`),
    ];
    // Workflow spans are exported when the workflow ends, activity spans when the activity does.
    await eventually(
      () =>
        workflowIds.every((id) =>
          spans().some((span) => span.name.startsWith('RunWorkflow:') && span.attributes.workflowId === id),
        ),
      { what: 'the workflow spans' },
    );
    const activitiesOf = (workflowId: string) =>
      spans().filter(
        (span) => span.name.startsWith('RunActivity:') && span.attributes.temporalWorkflowId === workflowId,
      );
    for (const workflowId of workflowIds) {
      const activities = activitiesOf(workflowId);
      expect({ workflowId, activities: activities.length > 0 }).toEqual({ workflowId, activities: true });
      expect(new Set(activities.map((span) => span.spanContext().traceId))).toEqual(new Set([traceId]));
    }
    const workflowSpans = spans().filter((span) =>
      workflowIds.includes(String(span.attributes.workflowId ?? span.attributes.temporalWorkflowId)),
    );
    expect(new Set(workflowSpans.map((span) => span.spanContext().traceId))).toEqual(new Set([traceId]));
  });

  it('continues the trace of an incoming traceparent header', async () => {
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const parentSpanId = 'b7ad6b7169203331';
    const response = await stack.http
      .get(`${api.ws}/deployments/${deploymentId}`)
      .set(stack.auth)
      .set('traceparent', `00-${traceId}-${parentSpanId}-01`);
    expect(response.status).toBe(200);
    const server = await serverSpanOf(response.headers['x-request-id']!);
    expect(server.name).toBe('GET /v1/workspaces/:workspaceId/deployments/:deploymentId');
    expect(server.spanContext().traceId).toBe(traceId);
    expect(server.parentSpanId).toBe(parentSpanId);
  });
});
