import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { bundleWorkflowCode } from '@temporalio/worker';
import { Client } from 'pg';
import type { Connection } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import pino from 'pino';
import { startTemporalDevServer, type TemporalDevServer } from '../cli/embedded/temporalServer';
import { freePort, readPid } from '../cli/embedded/processes';
import { ensureTemporalCli } from '../cli/temporalCli';
import { migrate, openDatabase, type Database } from '../db/database';

/**
 * What a benchmark runs against: a fresh database on the PostgreSQL at DATABASE_URL (default the
 * machine's 127.0.0.1:5432) and, unless TEMPORAL_ADDRESS is set, its own Temporal dev server,
 * configured as `flightdeck start` configures it: in memory, or persisting to its SQLite file as
 * the README's default stack does (`persistent`).
 */
export interface BenchEnvironment {
  orm: Database;
  databaseUrl: string;
  temporalAddress: string;
  /** The dev server's process, when the benchmark started one. */
  temporalPid?: number;
  logger: pino.Logger;
  close(): Promise<void>;
}

export async function benchEnvironment(
  name: string,
  { persistent = false }: { persistent?: boolean } = {},
): Promise<BenchEnvironment> {
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
      persistent,
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
    temporalPid: temporal?.pid,
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

/** Resident set size of a process, in MiB: now (`VmRSS`) or at its peak so far (`VmHWM`). */
export function rssMb(pid: number, which: 'VmRSS' | 'VmHWM'): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return round(Number(new RegExp(`${which}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) / 1024, 1);
}

export interface FlightdeckProcess {
  pid: number;
  /** Peak resident set size so far (VmHWM), in MiB. */
  peakRssMb(): number;
  /** Resident set size now, in MiB. */
  rssMb(): number;
  /** Its exit code or signal once it has exited, else null. */
  exited(): string | null;
  stop(): Promise<void>;
}

/**
 * The checkout whose build the bench runs: this one, or BENCH_FLIGHTDECK_ROOT's — another checkout
 * (a previous main, with its own `npm install`) measured by this bench's code, for an A/B on one machine.
 */
const ROOT = process.env.BENCH_FLIGHTDECK_ROOT
  ? path.resolve(process.env.BENCH_FLIGHTDECK_ROOT)
  : path.resolve(__dirname, '..');
let built = false;

/** `npm run build`, once per benchmark run: processes run from dist/, as `npm start` and operators run them. */
export function buildOnce(): void {
  if (built) return;
  const result = spawnSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  if (result.status !== 0) throw new Error('npm run build failed');
  built = true;
}

/**
 * The environment `npm start` and the image give every Flightdeck process (package.json,
 * Dockerfile), so figures are those of what users run.
 */
const AS_USERS_RUN = { MALLOC_ARENA_MAX: '2' };

/** What this bench started and has not seen exit, for a Ctrl-C to stop (`forwardStops`). */
const running = new Set<ChildProcess>();
let stopsForwarded = false;

/**
 * A Ctrl-C (or SIGTERM) reaches only this process, as the processes it started lead sessions of
 * their own: it passes them SIGTERM, with which each stops what it started, and exits.
 */
function forwardStops(): void {
  if (stopsForwarded) return;
  stopsForwarded = true;
  const stopAll = () => {
    for (const child of running) child.kill('SIGTERM');
    process.exit(130);
  };
  process.once('SIGINT', stopAll);
  process.once('SIGTERM', stopAll);
}

/**
 * Runs `flightdeck <args>` from dist/ with the given environment (added to this process's).
 * BENCH_NODE_FLAGS are node flags for it, and so for the API and worker `start` runs with its own
 * flags (`--cpu-prof --cpu-prof-dir=/tmp/prof`: a profile of each process, written as it exits).
 */
function spawnFlightdeck(args: string[], env: NodeJS.ProcessEnv): FlightdeckProcess {
  buildOnce();
  const flags = process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? [];
  const child = spawn(process.execPath, [...flags, path.join(ROOT, 'dist', 'cli', 'main.js'), ...args], {
    cwd: ROOT,
    // Several processes run at once: none takes the default metrics port.
    env: { ...process.env, ...AS_USERS_RUN, LOG_LEVEL: 'warn', FLIGHTDECK_METRICS_PORT: 'off', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
    // In a session of its own, as in a terminal of its own: the agents and writers this bench plays
    // run elsewhere, and where the kernel shares the CPU between sessions first (autogroups), sharing
    // one with them would halve what the API's process gets on a busy machine.
    detached: true,
  });
  forwardStops();
  running.add(child);
  child.once('exit', () => running.delete(child));
  return {
    pid: child.pid!,
    peakRssMb: () => rssMb(child.pid!, 'VmHWM'),
    rssMb: () => rssMb(child.pid!, 'VmRSS'),
    exited: () => (child.exitCode ?? child.signalCode)?.toString() ?? null,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** Memory of one process of the stack, or of PostgreSQL's processes together, in MiB. */
interface MemoryProbe {
  /** Now: the resident set (VmRSS); for PostgreSQL, the proportional set of all its processes (Pss). */
  now(): number;
  /** The largest so far: VmHWM, or for PostgreSQL the largest sample (`FlightdeckStack.sample`). */
  peak(): number;
}

/** A process's children, from /proc: PostgreSQL's backends under its postmaster, `start`'s children. */
function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) children.push(Number(entry));
    } catch {
      /* gone meanwhile */
    }
  }
  return children;
}

/** Proportional set size in MiB: shared pages (PostgreSQL's buffers) counted once over the processes sharing them. */
function pssMb(pid: number): number {
  try {
    const rollup = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    return Number(/^Pss:\s+(\d+)/m.exec(rollup)?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

/** Linux reports CPU times in USER_HZ ticks, 100 a second on every architecture it runs on. */
const TICKS_PER_SECOND = 100;

/**
 * CPU time (user and system) a process has used so far, in ms; with `reapedChildren`, also that of
 * the children it has waited for (PostgreSQL's backends that have ended, under its postmaster).
 */
function cpuMs(pid: number, reapedChildren = false): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // After the command's closing parenthesis: field 3 (state) first, so utime (14) is the 12th.
    const [utime, stime, cutime, cstime] = stat
      .slice(stat.lastIndexOf(')') + 2)
      .split(' ')
      .slice(11, 15)
      .map(Number) as [number, number, number, number];
    return ((utime + stime + (reapedChildren ? cutime + cstime : 0)) * 1000) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/** CPU time of PostgreSQL's processes together: the postmaster, its live backends and the ended ones. */
function postgresCpuMs(postmaster: number): number {
  return childrenOf(postmaster).reduce((sum, pid) => sum + cpuMs(pid), cpuMs(postmaster, true));
}

function processProbe(pid: number): MemoryProbe {
  // The kernel updates the high-water mark lazily: it may lag the resident set by a few pages.
  return { now: () => rssMb(pid, 'VmRSS'), peak: () => Math.max(rssMb(pid, 'VmHWM'), rssMb(pid, 'VmRSS')) };
}

function postgresProbe(postmaster: number): MemoryProbe {
  let largest = 0;
  const now = () => {
    const total = round(
      [postmaster, ...childrenOf(postmaster)].reduce((sum, pid) => sum + pssMb(pid), 0),
      1,
    );
    largest = Math.max(largest, total);
    return total;
  };
  return { now, peak: () => largest };
}

/**
 * The processes of `flightdeck start` by role: the API (the start process itself, which serves it:
 * cli/commands/start.ts), the worker, Temporal, PostgreSQL.
 */
export type StackRole = 'api' | 'worker' | 'temporal' | 'postgres';

export interface FlightdeckStack {
  /** The data directory `flightdeck start` runs in (PostgreSQL's, Temporal's SQLite file). */
  dataDir: string;
  apiUrl: string;
  /** Prometheus figures of the API and the worker (/metrics on the listener of its own). */
  metricsUrl: string;
  workspaceId: string;
  apiKey: string;
  databaseUrl: string;
  temporalAddress: string;
  /** Memory by role, now, in MiB. */
  memoryNow(): Record<StackRole, number>;
  /** Memory by role at its peak so far, in MiB. */
  memoryPeak(): Record<StackRole, number>;
  /**
   * `flightdeck start`'s own processes (itself with the API, and its children but Temporal: the
   * worker and the guardian) together, now, in MiB: the sum of their resident sets, and of their
   * proportional sets, which count the pages they share (the node binary's, mostly) once.
   */
  ownMemoryNow(): { rss: number; pss: number };
  /** CPU time used so far by role, in ms: what a phase cost each process is the difference of two readings. */
  cpuMs(): Record<StackRole, number>;
  stop(): Promise<void>;
}

/**
 * `flightdeck start` from dist/ as `npm start` runs it, in a data directory of its own: PostgreSQL
 * and Temporal embedded (the dev server persisting to its SQLite file), the API and the worker as
 * its child processes at their priorities. PostgreSQL's memory is sampled every second for its peak.
 */
export async function startFlightdeckStack(env: NodeJS.ProcessEnv = {}): Promise<FlightdeckStack> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'flightdeck-bench-start-'));
  // The embedded PostgreSQL runs as the postgres user when we are root: it must enter the directory.
  fs.chmodSync(dataDir, 0o755);
  const metricsPort = await freePort();
  const start = spawnFlightdeck(['start'], {
    FLIGHTDECK_DATA_DIR: dataDir,
    FLIGHTDECK_PORT: String(await freePort()),
    FLIGHTDECK_METRICS_PORT: String(metricsPort),
    FLIGHTDECK_EMBEDDED_PG_PORT: String(await freePort()),
    FLIGHTDECK_EMBEDDED_TEMPORAL_PORT: String(await freePort()),
    FLIGHTDECK_EMBEDDED_TEMPORAL_UI_PORT: String(await freePort()),
    DATABASE_URL: '',
    TEMPORAL_ADDRESS: '',
    ...env,
  });
  let sampler: NodeJS.Timeout | undefined;
  const stop = async () => {
    clearInterval(sampler);
    await start.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const runtimeFile = path.join(dataDir, 'runtime.json');
    await waitFor(
      async () => fs.existsSync(runtimeFile) || start.exited() !== null,
      'flightdeck start',
      300_000,
    );
    if (!fs.existsSync(runtimeFile)) {
      throw new Error(
        `flightdeck start exited (${start.exited()}) before it was ready: its stderr above says why`,
      );
    }
    const runtime = JSON.parse(fs.readFileSync(runtimeFile, 'utf8')) as {
      apiUrl: string;
      databaseUrl: string;
      temporalAddress: string;
      processes: { api: number; worker: number; temporal: number };
    };
    const credentials = JSON.parse(fs.readFileSync(path.join(dataDir, 'credentials.json'), 'utf8')) as {
      apiKey: string;
      workspaceId: string;
    };
    const postmaster = readPid(path.join(dataDir, 'postgres', 'postmaster.pid'));
    if (postmaster === undefined) throw new Error('the embedded PostgreSQL left no postmaster.pid');
    const probes: Record<StackRole, MemoryProbe> = {
      api: processProbe(runtime.processes.api),
      worker: processProbe(runtime.processes.worker),
      temporal: processProbe(runtime.processes.temporal),
      postgres: postgresProbe(postmaster),
    };
    sampler = setInterval(() => probes.postgres.now(), 1000);
    const byRole = (read: (probe: MemoryProbe) => number) =>
      Object.fromEntries(Object.entries(probes).map(([role, probe]) => [role, read(probe)])) as Record<
        StackRole,
        number
      >;
    return {
      dataDir,
      apiUrl: runtime.apiUrl,
      metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
      workspaceId: credentials.workspaceId,
      apiKey: credentials.apiKey,
      databaseUrl: runtime.databaseUrl,
      temporalAddress: runtime.temporalAddress,
      memoryNow: () => byRole((probe) => probe.now()),
      memoryPeak: () => byRole((probe) => probe.peak()),
      ownMemoryNow: () => {
        const own = [start.pid, ...childrenOf(start.pid).filter((pid) => pid !== runtime.processes.temporal)];
        const total = (read: (pid: number) => number) =>
          round(
            own.reduce((sum, pid) => sum + read(pid), 0),
            1,
          );
        return { rss: total((pid) => rssMb(pid, 'VmRSS')), pss: total(pssMb) };
      },
      cpuMs: () => ({
        api: cpuMs(runtime.processes.api),
        worker: cpuMs(runtime.processes.worker),
        temporal: cpuMs(runtime.processes.temporal),
        postgres: postgresCpuMs(postmaster),
      }),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** `flightdeck api` or `flightdeck worker`, as operators run them. */
export function spawnRole(role: 'api' | 'worker', env: NodeJS.ProcessEnv): FlightdeckProcess {
  return spawnFlightdeck([role], env);
}

const quietBundler = { trace() {}, debug() {}, info() {}, warn() {}, error: console.error, log() {} };

/** Bundles workflow code quietly (for the floors' own workflows). */
export async function bundleQuietly(workflowsPath: string): Promise<{ code: string }> {
  return bundleWorkflowCode({ workflowsPath, logger: quietBundler });
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

/** A connection that can describe task queues: the client's or the worker's. */
interface TaskQueueDescriber {
  workflowService: Pick<Connection['workflowService'], 'describeTaskQueue'>;
}

/** Waits until the API answers /readyz and a worker polls the task queue. */
export async function waitForServices(
  apiUrl: string,
  temporal: TaskQueueDescriber,
  taskQueue: string,
): Promise<void> {
  await waitFor(async () => (await fetch(`${apiUrl}/readyz`).catch(() => undefined))?.ok === true, 'the API');
  await waitForWorker(temporal, taskQueue);
}

export async function waitForWorker(temporal: TaskQueueDescriber, taskQueue: string): Promise<void> {
  await waitFor(async () => {
    const queue = await temporal.workflowService.describeTaskQueue({
      namespace: 'default',
      taskQueue: { name: taskQueue },
      taskQueueType: 1,
    });
    return (queue.pollers?.length ?? 0) > 0;
  }, 'the worker');
}

/** SQL against the stack's database (node-postgres placeholders). */
export type Query = <T = Record<string, unknown>>(sql: string, params?: unknown[]) => Promise<T[]>;

/** The one number a `SELECT count(*)::int AS n …` answers. */
export async function count(query: Query, sql: string, params: unknown[] = []): Promise<number> {
  return (await query<{ n: number }>(sql, params))[0]!.n;
}

/** Jobs queued for a job agent now. */
export function queuedJobs(query: Query, agentId: string): Promise<number> {
  return count(query, `SELECT count(*)::int AS n FROM job WHERE job_agent_id = $1 AND status = 'queued'`, [
    agentId,
  ]);
}

/** Temporal's SQLite file and its write-ahead log. */
export function sqliteBytes(stack: { dataDir: string }): number {
  return ['temporal.sqlite', 'temporal.sqlite-wal']
    .map((file) => path.join(stack.dataDir, file))
    .filter((file) => fs.existsSync(file))
    .reduce((sum, file) => sum + fs.statSync(file).size, 0);
}

/** Workflow tasks waiting in the task queue, as the server counts them. */
export async function workflowBacklog(connection: Connection, taskQueue: string): Promise<number> {
  const described = await connection.workflowService.describeTaskQueue({
    namespace: 'default',
    taskQueue: { name: taskQueue, kind: proto.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    taskQueueType: proto.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    reportStats: true,
  });
  return Number(described.stats?.approximateBacklogCount ?? 0);
}
