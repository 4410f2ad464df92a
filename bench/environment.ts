import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { bundleWorkflowCode } from '@temporalio/worker';
import type { Connection } from '@temporalio/client';
import { Client } from 'pg';
import pino from 'pino';
import { startTemporalDevServer, type TemporalDevServer } from '../cli/embedded/temporalServer';
import { freePort } from '../cli/embedded/processes';
import { ensureTemporalCli } from '../cli/temporalCli';
import { migrate, openDatabase, type Database } from '../db/database';
import { bundleWorkflows } from '../worker/workflowSource';

/**
 * What a benchmark runs against: a fresh database on the PostgreSQL at DATABASE_URL (default the
 * machine's 127.0.0.1:5432) and, unless TEMPORAL_ADDRESS is set, its own Temporal dev server.
 */
export interface BenchEnvironment {
  orm: Database;
  databaseUrl: string;
  temporalAddress: string;
  logger: pino.Logger;
  close(): Promise<void>;
}

export async function benchEnvironment(name: string): Promise<BenchEnvironment> {
  const adminUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const database = `flightdeck_bench_${name}_${Date.now().toString(36)}`;
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${database}"`);
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  const databaseUrl = url.toString();

  let temporal: TemporalDevServer | undefined;
  let temporalAddress = process.env.TEMPORAL_ADDRESS;
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'flightdeck-bench-'));
  if (!temporalAddress) {
    const cli = await ensureTemporalCli();
    temporal = await startTemporalDevServer({
      cliPath: cli.path,
      stateDir,
      port: await freePort(),
      persistent: false,
      namespace: 'default',
    });
    temporalAddress = temporal.address;
  }
  const orm = await openDatabase({ url: databaseUrl, poolMax: 20 });
  await migrate(orm);
  return {
    orm,
    databaseUrl,
    temporalAddress,
    logger: pino({ level: process.env.LOG_LEVEL ?? 'warn' }),
    async close() {
      await orm.close();
      await temporal?.stop();
      fs.rmSync(stateDir, { recursive: true, force: true });
      await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
      await admin.end();
    },
  };
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export function round(value: number, digits = 2): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

export function peakRssMb(): number {
  return round(process.resourceUsage().maxRSS / 1024, 1);
}

export interface RoleProcess {
  pid: number;
  /** Peak resident set size so far (VmHWM), in MiB. */
  peakRssMb(): number;
  stop(): Promise<void>;
}

/** Runs `flightdeck <role>` (api or worker) from source, as operators run it, with the given environment. */
export function spawnRole(role: 'api' | 'worker', env: NodeJS.ProcessEnv): RoleProcess {
  const root = path.resolve(__dirname, '..');
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'cli', 'main.ts'), role], {
    cwd: root,
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return {
    pid: child.pid!,
    peakRssMb() {
      const status = fs.readFileSync(`/proc/${child.pid}/status`, 'utf8');
      return round(Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024, 1);
    },
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

const quietBundler = { trace() {}, debug() {}, info() {}, warn() {}, error: console.error, log() {} };

/** Bundles workflow code quietly (production workers load a prebuilt bundle, not a fresh one). */
export async function bundleQuietly(workflowsPath: string): Promise<{ code: string }> {
  return bundleWorkflowCode({ workflowsPath, logger: quietBundler });
}

/**
 * Writes our workflows' bundle to a temporary file, for worker processes (FLIGHTDECK_WORKFLOW_BUNDLE):
 * the plain one a production worker runs with tracing off, the default.
 */
export async function prebuiltWorkflowBundle(): Promise<string> {
  const file = path.join(
    fs.mkdtempSync(path.join(os.tmpdir(), 'flightdeck-bench-bundle-')),
    'workflow-bundle.js',
  );
  fs.writeFileSync(file, (await bundleWorkflows(false, quietBundler)).code);
  return file;
}

export async function waitFor(
  check: () => Promise<boolean>,
  what: string,
  timeoutMs = 120_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** Runs `work(0..count-1)` with at most `concurrency` at a time. */
export async function inParallel(
  count: number,
  concurrency: number,
  work: (n: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) await work(next++);
    }),
  );
}

/** A JSON caller for a workspace's API on a running server; any status ≥ 300 throws. */
export function workspaceApi(apiUrl: string, workspaceId: string, key: string) {
  return async <T = { id: string }>(method: string, route: string, body?: object): Promise<T> => {
    const res = await fetch(`${apiUrl}/v1/workspaces/${workspaceId}${route}`, {
      method,
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: body ? JSON.stringify(body) : undefined,
    });
    if (res.status >= 300) throw new Error(`${method} ${route} answered ${res.status}: ${await res.text()}`);
    return res.json() as Promise<T>;
  };
}

/** Waits until the API answers /readyz and a worker polls the task queue. */
export async function waitForServices(
  apiUrl: string,
  temporal: Connection,
  taskQueue: string,
): Promise<void> {
  await waitFor(async () => (await fetch(`${apiUrl}/readyz`).catch(() => undefined))?.ok === true, 'the API');
  await waitForWorker(temporal, taskQueue);
}

export async function waitForWorker(temporal: Connection, taskQueue: string): Promise<void> {
  await waitFor(async () => {
    const queue = await temporal.workflowService.describeTaskQueue({
      namespace: 'default',
      taskQueue: { name: taskQueue },
      taskQueueType: 1,
    });
    return (queue.pollers?.length ?? 0) > 0;
  }, 'the worker');
}
