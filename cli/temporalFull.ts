import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Connection, isGrpcServiceError } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { ensureSearchAttributes } from '../worker/searchAttributes';
import { searchAttributeRegistrations } from '../workflows/searchAttributes';
import { assertPortFree, freePort, stopLeftover, tail, terminate } from './embedded/processes';
import { TASK_MATCHING_CONFIG } from './embedded/temporalServer';
import { waitForTemporal } from './embedded/temporalReady';
import { findOnPath, isExecutable, run, temporalCacheDir, TemporalCliError } from './temporalCli';

/**
 * A full Temporal server (frontend, history, matching and worker services in one process)
 * persisting to PostgreSQL: what production runs, as opposed to the dev server in the CLI. No npm
 * package ships it, so it is built once from Go modules into the per-user cache, like the CLI.
 *
 * Version v1.29.1: the server the CLI v1.5.1 embeds, so a machine that built the CLI already holds
 * its modules; its go.mod asks for Go 1.25 (newer servers ask for Go 1.26.10, above the machines'
 * 1.26.8) and has no replace directive, so a plain `go install pkg@version` builds it.
 */
export const TEMPORAL_SERVER_VERSION = 'v1.29.1';

const SERVER_MODULE = 'go.temporal.io/server';
/** The SQL plugin for PostgreSQL 12 and newer, for both persistence and visibility. */
const PG_PLUGIN = 'postgres12';
const SERVER_BINARY = 'temporal-server';

type Log = (line: string) => void;
const stderrLog: Log = (line) => process.stderr.write(`${line}\n`);

export interface TemporalServerInstall {
  version: string;
  /** The server (`go.temporal.io/server/cmd/server`). */
  serverPath: string;
  /** The schema tool (`go.temporal.io/server/cmd/tools/sql`). */
  sqlToolPath: string;
  /** Holds `temporal/versioned` and `visibility/versioned`: the PostgreSQL 12+ schema, copied from the module. */
  schemaDir: string;
  source: 'cache' | 'built';
}

function installDir(env: NodeJS.ProcessEnv): string {
  return path.join(temporalCacheDir(env), `temporal-server-${TEMPORAL_SERVER_VERSION}`);
}

function layout(dir: string): Omit<TemporalServerInstall, 'source'> {
  return {
    version: TEMPORAL_SERVER_VERSION,
    serverPath: path.join(dir, SERVER_BINARY),
    sqlToolPath: path.join(dir, 'temporal-sql-tool'),
    schemaDir: path.join(dir, 'schema', 'postgresql', 'v12'),
  };
}

/** The cached build, if a complete one is there. */
export function findTemporalServer(env: NodeJS.ProcessEnv = process.env): TemporalServerInstall | undefined {
  const found = layout(installDir(env));
  const complete =
    isExecutable(found.serverPath) &&
    isExecutable(found.sqlToolPath) &&
    fs.existsSync(path.join(found.schemaDir, 'temporal', 'versioned'));
  return complete ? { ...found, source: 'cache' } : undefined;
}

/**
 * The server and its schema tool, built on first use into
 * `~/.cache/flightdeck/temporal-server-<version>/` (minutes; instant afterwards).
 */
export async function ensureTemporalServer(
  log: Log = stderrLog,
  env: NodeJS.ProcessEnv = process.env,
): Promise<TemporalServerInstall> {
  const found = findTemporalServer(env);
  if (found) return found;
  const go = findOnPath('go', env);
  if (!go) {
    throw new TemporalCliError(
      'The full Temporal server is not built yet and Go is not installed to build it. Install Go 1.25 ' +
        'or newer (https://go.dev/dl), or run a Temporal server yourself and set TEMPORAL_ADDRESS.',
    );
  }
  const target = installDir(env);
  fs.mkdirSync(path.dirname(target), { recursive: true });
  // Build into a private directory, then rename it into place: a concurrent builder or a reader
  // never sees half an install, and the loser of a race simply discards its copy.
  const work = fs.mkdtempSync(path.join(path.dirname(target), '.build-server-'));
  const started = Date.now();
  try {
    log(`Building Temporal server ${TEMPORAL_SERVER_VERSION} from Go modules (first run only; minutes)...`);
    const goEnv = { ...env, CGO_ENABLED: '0', GOBIN: work, GOFLAGS: '' };
    await run(
      go,
      [
        'install',
        `${SERVER_MODULE}/cmd/server@${TEMPORAL_SERVER_VERSION}`,
        `${SERVER_MODULE}/cmd/tools/sql@${TEMPORAL_SERVER_VERSION}`,
      ],
      { cwd: work, env: goEnv, log },
    );
    const built = layout(work);
    fs.renameSync(path.join(work, 'server'), built.serverPath);
    fs.renameSync(path.join(work, 'sql'), built.sqlToolPath);
    // The schema files are part of the module's source; a copy beside the binaries keeps the
    // install usable after `go clean -modcache`.
    const modCache = spawnSync(go, ['env', 'GOMODCACHE'], { env: goEnv, encoding: 'utf8' }).stdout.trim();
    copyTree(
      path.join(modCache, `${SERVER_MODULE}@${TEMPORAL_SERVER_VERSION}`, 'schema', 'postgresql', 'v12'),
      built.schemaDir,
    );
    fs.chmodSync(work, 0o755);
    try {
      fs.renameSync(work, target);
    } catch (error) {
      if (!findTemporalServer(env)) throw error;
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  const install = findTemporalServer(env);
  if (!install) throw new TemporalCliError(`The build finished but ${target} is incomplete`);
  log(
    `Temporal server ${TEMPORAL_SERVER_VERSION} built in ${Math.round((Date.now() - started) / 1000)} s: ${target}`,
  );
  return { ...install, source: 'built' };
}

/** Copies a directory tree, making the copy writable (the module cache is read-only). */
function copyTree(from: string, to: string): void {
  fs.mkdirSync(to, { recursive: true });
  for (const entry of fs.readdirSync(from, { withFileTypes: true })) {
    const source = path.join(from, entry.name);
    const destination = path.join(to, entry.name);
    if (entry.isDirectory()) copyTree(source, destination);
    else {
      fs.copyFileSync(source, destination);
      fs.chmodSync(destination, 0o644);
    }
  }
}

export interface PostgresEndpoint {
  host: string;
  port: number;
  user: string;
  password?: string;
}

export interface FullTemporalServerOptions {
  /** The PostgreSQL server that holds Temporal's two databases. */
  postgres: PostgresEndpoint;
  /**
   * Temporal's own database and its visibility database; created with their schema when missing,
   * brought up to date otherwise. Tests prefix them (`fd_temporal_<suffix>`) so runs never collide.
   */
  databases: { temporal: string; visibility: string };
  /** The frontend's gRPC port, the one clients use. Default: a free port. */
  frontendPort?: number;
  /** Address every service binds to. Default 127.0.0.1; `0.0.0.0` serves other machines. */
  host?: string;
  /** Holds the generated configuration, the log and the pid file. */
  dataDir: string;
  /** Created with Flightdeck's search attributes. Default `default`. */
  namespace?: string;
  /** Fixed when the databases are first created: changing it later requires new databases. Default 4. */
  numHistoryShards?: number;
  /** Server log level (its JSON log goes to `<dataDir>/temporal-server.log`). Default `warn`. */
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  /** Progress lines (schema steps, start-up). Default: stderr. */
  log?: Log;
  startTimeoutMs?: number;
}

export interface FullTemporalServer {
  /** `host:port` of the frontend, for TEMPORAL_ADDRESS. */
  address: string;
  namespace: string;
  pid: number;
  logFile: string;
  stop(): Promise<void>;
}

/**
 * `postgres://user:password@host:port/temporal` → the endpoint and the database pair
 * `temporal` + `temporal_visibility` (the URL's database, `temporal` when it names none).
 */
export function postgresFromUrl(url: string): Pick<FullTemporalServerOptions, 'postgres' | 'databases'> {
  const parsed = new URL(url);
  // Not the URL itself in the message: it may hold a password.
  if (!/^postgres(ql)?:$/.test(parsed.protocol))
    throw new Error(`expected a postgres:// URL, not ${parsed.protocol}`);
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, '')) || 'temporal';
  return {
    postgres: {
      host: parsed.hostname || '127.0.0.1',
      port: parsed.port ? Number(parsed.port) : 5432,
      user: decodeURIComponent(parsed.username) || 'postgres',
      password: parsed.password ? decodeURIComponent(parsed.password) : undefined,
    },
    databases: { temporal: database, visibility: `${database}_visibility` },
  };
}

/**
 * Starts a full Temporal server on PostgreSQL and returns once its namespace answers with
 * Flightdeck's search attributes registered (building the server first if the cache lacks it).
 *
 * Idempotent on the databases: the first start creates them and their schema, later starts (or a
 * newer server version) apply only missing schema versions. All four services run in one process
 * on `host`; every port but the frontend's is picked free, so several servers (on different
 * databases) run side by side. `stop()` sends SIGTERM, then SIGKILL after 10 s. The databases and
 * `dataDir` are kept: a caller that wants them gone drops and removes them.
 *
 * ```ts
 * const server = await startFullTemporalServer({
 *   postgres: postgresFromUrl(adminUrl).postgres,
 *   databases: { temporal: `fd_temporal_${suffix}`, visibility: `fd_temporal_${suffix}_visibility` },
 *   dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'fd-temporal-')),
 * });
 * // TEMPORAL_ADDRESS=server.address, TEMPORAL_NAMESPACE=server.namespace; at the end: server.stop()
 * ```
 */
export async function startFullTemporalServer(
  options: FullTemporalServerOptions,
): Promise<FullTemporalServer> {
  const log = options.log ?? stderrLog;
  const namespace = options.namespace ?? 'default';
  const host = options.host ?? '127.0.0.1';
  for (const name of Object.values(options.databases)) {
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) {
      throw new Error(`Database name ${JSON.stringify(name)}: use lower-case letters, digits and _`);
    }
  }
  fs.mkdirSync(options.dataDir, { recursive: true });
  const configDir = path.join(options.dataDir, 'config');
  const pidFile = path.join(options.dataDir, 'temporal-server.pid');
  const logFile = path.join(options.dataDir, 'temporal-server.log');
  // A server left behind by a start that was killed still holds its ports.
  await stopLeftover(pidFile, SERVER_BINARY);
  if (options.frontendPort !== undefined) {
    await assertPortFree(host, options.frontendPort, 'Choose another frontend port.');
  }
  const install = await ensureTemporalServer(log);
  await prepareDatabases(install, options, log);

  const ports = await servicePorts(options.frontendPort, host);
  fs.mkdirSync(configDir, { recursive: true });
  // Mode 0600: the file holds the database password.
  fs.writeFileSync(path.join(configDir, 'flightdeck.yaml'), serverConfig(options, host, ports), {
    mode: 0o600,
  });
  fs.writeFileSync(path.join(configDir, 'dynamic.yaml'), dynamicConfig());

  const out = fs.openSync(logFile, 'a');
  // Its own process group: a terminal's Ctrl-C reaches only the parent, which stops it in order.
  const child = spawn(
    install.serverPath,
    ['--root', options.dataDir, '--config', 'config', '--env', 'flightdeck', '--allow-no-auth', 'start'],
    { detached: true, stdio: ['ignore', out, out] },
  );
  fs.closeSync(out);
  const pid = child.pid;
  if (pid === undefined) throw new Error(`Could not start ${install.serverPath}`);
  child.unref();
  fs.writeFileSync(pidFile, String(pid));

  const address = frontendAddress(host, ports);
  const stop = async () => {
    await terminate(pid);
    fs.rmSync(pidFile, { force: true });
  };
  try {
    await waitUntilReady(address, namespace, pid, options.startTimeoutMs ?? 120_000);
  } catch (error) {
    await stop();
    throw new Error(`${(error as Error).message}\n--- ${logFile} ---\n${tail(logFile)}`);
  }
  return { address, namespace, pid, logFile, stop };
}

/**
 * Creates the databases when missing, then brings both schemas to the newest version this server
 * knows. Every step is a no-op on an up-to-date database: `create-database` ignores an existing
 * one, `setup-schema -v 0.0` only creates the version tables when missing, and `update-schema`
 * applies the versions above the stored one.
 */
async function prepareDatabases(
  install: TemporalServerInstall,
  options: FullTemporalServerOptions,
  log: Log,
): Promise<void> {
  const { postgres, databases } = options;
  const connect = [
    '--plugin',
    PG_PLUGIN,
    '--endpoint',
    postgres.host,
    '--port',
    String(postgres.port),
    '--user',
    postgres.user,
  ];
  // The password goes through the environment: a command line is readable by every local user.
  const env = { ...process.env, SQL_PASSWORD: postgres.password ?? '' };
  const tool = (database: string, ...args: string[]) =>
    run(install.sqlToolPath, [...connect, '--database', database, ...args], {
      cwd: options.dataDir,
      env,
      quiet: true,
    });
  log(`Preparing databases ${databases.temporal} and ${databases.visibility}`);
  const schemas = [
    { database: databases.temporal, dir: path.join(install.schemaDir, 'temporal', 'versioned') },
    { database: databases.visibility, dir: path.join(install.schemaDir, 'visibility', 'versioned') },
  ];
  for (const { database, dir } of schemas) {
    await tool(database, 'create-database', '--defaultdb', 'postgres');
    await tool(database, 'setup-schema', '--version', '0.0');
    await tool(database, 'update-schema', '--schema-dir', dir);
  }
}

interface ServicePorts {
  frontend: number;
  frontendMembership: number;
  history: number;
  historyMembership: number;
  matching: number;
  matchingMembership: number;
  worker: number;
  workerMembership: number;
}

/**
 * The frontend's port when given, free ports for the rest, all different. Membership ports are
 * stored in a SMALLINT column (cluster_membership.rpc_port): `freePort` draws from below 32768.
 */
async function servicePorts(frontend: number | undefined, host: string): Promise<ServicePorts> {
  const taken = new Set<number>(frontend === undefined ? [] : [frontend]);
  const pick = async (draw: () => Promise<number>): Promise<number> => {
    for (;;) {
      const port = await draw();
      if (!taken.has(port)) {
        taken.add(port);
        return port;
      }
    }
  };
  const port = () => pick(() => freePort(host));
  return {
    frontend: frontend ?? (await port()),
    frontendMembership: await port(),
    history: await port(),
    historyMembership: await port(),
    matching: await port(),
    matchingMembership: await port(),
    worker: await port(),
    workerMembership: await port(),
  };
}

/** Where clients and the server's own services reach the frontend. */
function frontendAddress(host: string, ports: ServicePorts): string {
  return `${host === '0.0.0.0' ? '127.0.0.1' : host}:${ports.frontend}`;
}

function serverConfig(options: FullTemporalServerOptions, host: string, ports: ServicePorts): string {
  const datastore = (database: string, maxConns: number) => ({
    sql: {
      pluginName: PG_PLUGIN,
      databaseName: database,
      connectAddr: `${options.postgres.host}:${options.postgres.port}`,
      connectProtocol: 'tcp',
      user: options.postgres.user,
      password: options.postgres.password ?? '',
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  const service = (grpcPort: number, membershipPort: number) => ({
    rpc: { grpcPort, membershipPort, bindOnIP: host },
  });
  const config = {
    log: { stdout: true, level: options.logLevel ?? 'warn' },
    persistence: {
      defaultStore: 'default',
      visibilityStore: 'visibility',
      numHistoryShards: options.numHistoryShards ?? 4,
      datastores: {
        default: datastore(options.databases.temporal, 20),
        visibility: datastore(options.databases.visibility, 10),
      },
    },
    global: {
      // All services share one process; they find one another over loopback.
      membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' },
    },
    services: {
      frontend: service(ports.frontend, ports.frontendMembership),
      history: service(ports.history, ports.historyMembership),
      matching: service(ports.matching, ports.matchingMembership),
      worker: service(ports.worker, ports.workerMembership),
    },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: {
          enabled: true,
          initialFailoverVersion: 1,
          rpcName: 'frontend',
          rpcAddress: frontendAddress(host, ports),
        },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    publicClient: { hostPort: frontendAddress(host, ports) },
    dynamicConfigClient: {
      filepath: path.join(options.dataDir, 'config', 'dynamic.yaml'),
      pollInterval: '60s',
    },
  };
  // JSON is YAML, and it spares a hand-written serializer any quoting question.
  return `${JSON.stringify(config, null, 2)}\n`;
}

/** The server's dynamic configuration: task priorities and fairness, as the embedded server has them. */
function dynamicConfig(): string {
  return `${JSON.stringify(
    Object.fromEntries(Object.entries(TASK_MATCHING_CONFIG).map(([key, value]) => [key, [{ value }]])),
    null,
    2,
  )}\n`;
}

const GRPC_ALREADY_EXISTS = 6;
/** Closed workflows stay readable in the UI for this long. */
const RETENTION = '3 days';

/** `use` on a connection of its own, closed after. */
async function onFreshConnection(
  address: string,
  use: (connection: Connection) => Promise<void>,
): Promise<void> {
  const connection = await Connection.connect({ address, connectTimeout: 1000 });
  try {
    await use(connection);
  } finally {
    await connection.close();
  }
}

/**
 * Ready means: the frontend answers, the namespace exists (a full server starts without any), and
 * the frontend accepts a query naming every Flightdeck search attribute, which it does only once
 * its namespace cache holds the attributes registered here.
 */
function waitUntilReady(address: string, namespace: string, pid: number, timeoutMs: number) {
  const query = searchAttributeRegistrations()
    .map((attribute) => `${attribute.name} = 'ready'`)
    .join(' AND ');
  return waitForTemporal({
    pid,
    what: 'The Temporal server',
    timeoutMs,
    pauseMs: 500,
    ready: () =>
      onFreshConnection(address, async (connection) => {
        await connection.workflowService.getSystemInfo({});
        try {
          await connection.workflowService.registerNamespace({
            namespace,
            workflowExecutionRetentionPeriod: msToTs(RETENTION),
          });
        } catch (error) {
          if (!isGrpcServiceError(error) || error.code !== GRPC_ALREADY_EXISTS) throw error;
        }
        await ensureSearchAttributes(connection, namespace);
        await connection.workflowService.countWorkflowExecutions({ namespace, query });
      }),
  });
}
