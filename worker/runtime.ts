import { Client } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { Logger } from 'pino';
import { createActivities } from '../activities';
import { DEFAULT_EGRESS_POLICY, type EgressPolicy } from '../activities/egress';
import { activityHeartbeats } from './activityHeartbeats';
import { recordSelectorOverruns } from '../engine/selectors';
import type { Database } from '../db/database';
import type { SecretBox } from '../db/secrets';
import type { RegoEngine } from '../domain/planValidation';
import { createOrchestrationDispatch } from './orchestrationDispatch';
import { OutboxRelay } from './outboxRelay';
import { ensureSearchAttributes } from './searchAttributes';
import { leaseTaskQueue, rolloutTaskQueue, webhookTaskQueue } from './taskQueues';
import { leaseWorkerTuning, rolloutWorkerTuning, webhookWorkerTuning, workerTuning } from './tuning';
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry';
import type { InjectedSinks } from '@temporalio/worker';
import type { WorkflowSpans } from './tracing';
import { bundleWorkflows, workflowSource, type WorkflowSource } from './workflowSource';
import { startAuditRetention } from './auditRetention';
import { DEFAULT_AUDIT_RETENTION_DAYS } from '../domain/audit';

/**
 * The workflow interceptors' sink with tracing off. A traced bundle can reach a worker with tracing
 * off (FLIGHTDECK_WORKFLOW_BUNDLE), so the sink always exists (the worker logs an error for every
 * call to a missing sink); this one drops the spans.
 */
const DROPPED_WORKFLOW_SPANS: InjectedSinks<OpenTelemetrySinks> = {
  exporter: { export: { fn: () => undefined } },
};

export interface WorkerRuntimeOptions {
  orm: Database;
  secrets: SecretBox;
  /** Where activities may send requests on a caller's behalf; default: public addresses only. */
  egress?: EgressPolicy;
  /** Where webhook deliveries may go (never `egress`); default: public addresses only. */
  webhookEgress?: EgressPolicy;
  /** Webhook deliveries a workspace may start per minute (db/webhookAdmissions.ts default). */
  webhookDeliveriesPerMinute?: number;
  /** Evaluates `planValidationOpa` rules (cli/opa.ts). */
  rego: RegoEngine;
  databaseUrl: string;
  temporal: { address: string; namespace: string; taskQueue: string };
  /** How much memory the worker's workflow cache may take (see worker/tuning.ts). */
  workflowCacheMb?: number;
  logger: Logger;
  /** Overrides where workflow code comes from (tests pass their prebuilt bundle). */
  workflows?: WorkflowSource;
  /** Skips registering search attributes (the dev server registers them at start). */
  skipSearchAttributeRegistration?: boolean;
  /** Where workflow spans go when tracing is on (the process's span processor); dropped otherwise. */
  workflowSpans?: WorkflowSpans;
  /** Days the audit trail and the webhook delivery log are kept (domain/audit.ts default). */
  auditRetentionDays?: number;
}

export interface WorkerRuntime {
  client: Client;
  worker: Worker;
  relay: OutboxRelay;
  /** Resolves when the worker stopped; rejects if it crashed. */
  done: Promise<void>;
  stop(): Promise<void>;
}

/**
 * The background half of Flightdeck: a Temporal worker running our workflows and activities, and
 * the outbox relay that turns committed intents into workflow starts and signals. Any number of
 * these may run against one Temporal namespace and one database.
 */
export async function startWorkerRuntime(options: WorkerRuntimeOptions): Promise<WorkerRuntime> {
  const { temporal, logger } = options;
  // One connection for the worker and the relay's client: a start the relay makes can then hand
  // the workflow's first task straight to this worker (eager start).
  const connection = await NativeConnection.connect({ address: temporal.address });
  const flushSelectorOverruns = recordSelectorOverruns(options.orm);
  if (!options.skipSearchAttributeRegistration) {
    const added = await ensureSearchAttributes(connection, temporal.namespace);
    if (added.length > 0) logger.info({ added }, 'registered search attributes');
  }
  // With tracing on, the relay's starts and signals carry the trace to the workflows; with it off,
  // no tracing interceptor runs at all.
  const traced = options.workflowSpans !== undefined;
  // The interceptors and the SDK's span classes load only with tracing on.
  const tracing = traced ? await import('./tracing.js') : undefined;
  const client = new Client({
    connection,
    namespace: temporal.namespace,
    ...(tracing ? { interceptors: tracing.tracingClientInterceptors() } : {}),
  });
  const given = options.workflows ?? workflowSource(traced);
  // One bundle for both workers (bundling takes seconds).
  const source: WorkflowSource =
    'workflowsPath' in given ? { workflowBundle: { code: (await bundleWorkflows(traced)).code } } : given;
  const activities = createActivities({
    orm: options.orm,
    secrets: options.secrets,
    egress: options.egress ?? DEFAULT_EGRESS_POLICY,
    webhookEgress: options.webhookEgress ?? DEFAULT_EGRESS_POLICY,
    rego: options.rego,
  });
  const workerOf = (taskQueue: string, tuning: ReturnType<typeof workerTuning>) =>
    Worker.create({
      connection,
      namespace: temporal.namespace,
      taskQueue,
      activities,
      interceptors: {
        activity: tracing ? [tracing.activityTracing, activityHeartbeats] : [activityHeartbeats],
      },
      sinks: tracing ? tracing.workflowSpanSinks(options.workflowSpans!) : DROPPED_WORKFLOW_SPANS,
      ...source,
      ...tuning,
    });
  // Releases (and runbook runs) on the task queue; the rollouts that create them, the leases of
  // agents' claims and webhook deliveries each on a queue and a worker of their own (worker/taskQueues.ts).
  const worker = await workerOf(temporal.taskQueue, workerTuning(options.workflowCacheMb));
  const rolloutWorker = await workerOf(rolloutTaskQueue(temporal.taskQueue), rolloutWorkerTuning());
  const leaseWorker = await workerOf(leaseTaskQueue(temporal.taskQueue), leaseWorkerTuning());
  const webhookWorker = await workerOf(webhookTaskQueue(temporal.taskQueue), webhookWorkerTuning());
  const workers = [worker, rolloutWorker, leaseWorker, webhookWorker];
  const relay = new OutboxRelay({
    databaseUrl: options.databaseUrl,
    dispatch: createOrchestrationDispatch(client, temporal.taskQueue),
    logger: logger.child({ component: 'outbox-relay' }),
    webhookDeliveriesPerMinute: options.webhookDeliveriesPerMinute,
  });
  const done = Promise.all(workers.map((each) => each.run())).then(() => undefined);
  await relay.start();
  const stopAuditRetention = startAuditRetention(
    options.orm,
    options.auditRetentionDays ?? DEFAULT_AUDIT_RETENTION_DAYS,
    logger,
  );
  logger.info({ taskQueue: temporal.taskQueue, namespace: temporal.namespace }, 'worker running');

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      await relay.stop();
      await stopAuditRetention();
      for (const each of workers) if (each.getState() === 'RUNNING') each.shutdown();
      await done.catch((error) => logger.error({ err: error }, 'worker stopped with an error'));
      await flushSelectorOverruns();
      await connection.close();
    })());
  return { client, worker, relay, done, stop };
}
