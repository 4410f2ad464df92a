import { freePort } from '../../cli/embedded/processes';
import { findOpa, OpaEngine } from '../../cli/opa';
import type { RegoEngine } from '../../domain/planValidation';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import type { EntityManager } from '@mikro-orm/postgresql';
import { Client, Connection } from '@temporalio/client';
import pino, { type Logger } from 'pino';
import supertest from 'supertest';
import { createApp, type AppDeps, type FlightdeckApp } from '../../api/app';
import { storeFactory } from '../../application';
import type { EgressPolicy } from '../../activities/egress';
import type { TransportPolicy } from '../../api/middleware/transport';
import { pingDatabase, openDatabase, type Database } from '../../db/database';
import { SecretBox } from '../../db/secrets';
import { ApiKeyStore } from '../../application/apiKeys';
import { WorkspaceStore } from '../../application/workspaces';
import { startWorkerRuntime, type WorkerRuntime } from '../../worker/runtime';
import type { WorkflowSpans } from '../../worker/tracing';
import { installTemporalRuntime } from '../../worker/temporalRuntime';
import { harnessValue } from '../harness';
import { createTestDatabase, type TestDatabase } from './database';

export interface TestStack {
  db: TestDatabase;
  orm: Database;
  secrets: SecretBox;
  /** The Rego engine the API and the worker use. */
  rego: RegoEngine;
  /** The key behind `secrets`, for worker processes the test starts. */
  secretKey: string;
  app: FlightdeckApp;
  http: ReturnType<typeof supertest>;
  temporal: Client;
  taskQueue: string;
  worker?: WorkerRuntime;
  workspaceId: string;
  apiKey: string;
  /** Headers that authenticate as the stack's workspace. */
  auth: { 'x-api-key': string };
  logger: Logger;
  /** Starts the worker if the stack was created without one (or after `stopWorker`). */
  startWorker(): Promise<WorkerRuntime>;
  stopWorker(): Promise<void>;
  close(): Promise<void>;
}

export interface TestStackOptions {
  /** Run a worker and outbox relay on the stack's own task queue (default true). */
  worker?: boolean;
  adminToken?: string;
  /** /metrics: its token, tenant labels, how long the gauges are reused (default: not at all). */
  metrics?: AppDeps['metrics'];
  /** The Temporal UI the rollout board links to. */
  temporalUi?: AppDeps['temporalUi'];
  bodyLimit?: string;
  /** Who may use pull endpoints over plain HTTP (default: loopback only). */
  transport?: TransportPolicy;
  /**
   * Where the worker's webhook deliveries may go (default: public addresses only, as in production,
   * while the agents' fakes on loopback are reachable): a test of a local receiver opens loopback.
   */
  webhookEgress?: EgressPolicy;
  /** Webhook deliveries a workspace may start per minute, for the API and the worker (default 600). */
  webhookDeliveriesPerMinute?: number;
  /** Where the API, the worker and (for the file's first stack) Temporal's runtime log. */
  logger?: Logger;
  /**
   * The span processor of a tracer provider the test registered (cli/tracing.ts `installTracing`),
   * for the worker's workflow spans; the API and activities use the global provider anyway.
   */
  workflowSpans?: WorkflowSpans;
  /**
   * Another Temporal frontend than the harness's dev server (a full server); its `default`
   * namespace must hold our search attributes already.
   */
  temporalAddress?: string;
  /**
   * The file's first stack installs Temporal's runtime for the test process; with this, the SDK's
   * metrics are served from a loopback port, for the files that read them. Not by default: a runtime
   * the SDK re-creates after its last worker stopped binds the same port again, which may be taken
   * by then.
   */
  temporalSdkMetrics?: boolean;
}

export function testLogger(): Logger {
  return pino({ level: process.env.FLIGHTDECK_TEST_LOG ?? 'silent' });
}

/** A logger at the most verbose level that keeps every line, for tests that check what is never logged. */
export function capturedLogger(): { logger: Logger; text: () => string } {
  let lines = '';
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines += chunk.toString();
      done();
    },
  });
  return { logger: pino({ level: 'trace' }, sink), text: () => lines };
}

let runtimeInstalled = false;
/** The SDK metrics exporter of this test process (one runtime per process). */
let temporalSdkUrl: string | undefined;

/**
 * Everything one test file needs: its own database (cloned from the migrated template), the Koa
 * app behind supertest, a Temporal client, and a worker on a task queue no other file uses.
 */
export async function startTestStack(options: TestStackOptions = {}): Promise<TestStack> {
  const logger = options.logger ?? testLogger();
  if (!runtimeInstalled) {
    temporalSdkUrl = await installTemporalRuntime(
      logger,
      options.temporalSdkMetrics ? () => freePort() : undefined,
    );
    runtimeInstalled = true;
  }
  const db = await createTestDatabase();
  const orm = await openDatabase({ url: db.url, poolMax: 5 });
  const address = options.temporalAddress ?? harnessValue('temporalAddress');
  const connection = await Connection.connect({ address });
  const temporal = new Client({ connection, namespace: 'default' });
  const taskQueue = `test-${randomBytes(6).toString('hex')}`;

  const em = orm.em.fork() as EntityManager;
  const workspace = await new WorkspaceStore(em).create({ name: 'Test workspace' });
  const issued = await new ApiKeyStore(em).create({ workspaceId: workspace.id, name: 'test' });

  // globalSetup ensured the binary (cli/opa.ts).
  const rego = new OpaEngine(findOpa());
  const secretKey = SecretBox.generateKey();
  const secrets = SecretBox.fromString(secretKey);
  const app = createApp({
    stores: storeFactory(orm, {
      secrets,
      rego,
      webhookDeliveriesPerMinute: options.webhookDeliveriesPerMinute,
    }),
    orm,
    logger,
    bodyLimit: options.bodyLimit ?? '1mb',
    adminToken: options.adminToken,
    // Every scrape reads the database-backed gauges afresh, unless a test asks otherwise.
    metrics: { stateIntervalMs: 0, ...options.metrics, temporalSdkUrl },
    ...(options.temporalUi ? { temporalUi: options.temporalUi } : {}),
    version: 'test',
    transport: options.transport ?? { trustedProxies: [], allowInsecurePull: false },
    readiness: {
      postgres: () => pingDatabase(orm),
      temporal: async () => {
        await connection.workflowService.getSystemInfo({});
      },
    },
  });

  const stack: TestStack = {
    db,
    orm,
    secrets,
    rego,
    secretKey,
    app,
    http: supertest(app.app.callback()),
    temporal,
    taskQueue,
    workspaceId: workspace.id,
    apiKey: issued.key,
    auth: { 'x-api-key': issued.key },
    logger,
    async startWorker() {
      stack.worker ??= await startWorkerRuntime({
        orm,
        secrets,
        // The fakes of remote services listen on loopback.
        egress: { allow: ['127.0.0.0/8', '::1'], deny: [] },
        webhookEgress: options.webhookEgress,
        webhookDeliveriesPerMinute: options.webhookDeliveriesPerMinute,
        rego,
        databaseUrl: db.url,
        temporal: { address, namespace: 'default', taskQueue },
        logger,
        // The harness's bundle is the plain one production runs with tracing off; a traced stack
        // bundles its own, with the tracing interceptors (worker/runtime.ts adds them).
        workflows: options.workflowSpans
          ? { workflowsPath: require.resolve('../../workflows') }
          : { workflowBundle: { codePath: harnessValue('workflowBundle') } },
        skipSearchAttributeRegistration: true,
        workflowSpans: options.workflowSpans,
      });
      return stack.worker;
    },
    async stopWorker() {
      await stack.worker?.stop();
      stack.worker = undefined;
    },
    async close() {
      await stack.stopWorker();
      await connection.close();
      await orm.close();
      await db.drop();
    },
  };
  if (options.worker ?? true) await stack.startWorker();
  return stack;
}

/** The stack's app on a real loopback socket, for clients that speak HTTP themselves (the CLI, a browser). */
export async function listenOnSocket(stack: TestStack): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer(stack.app.app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
