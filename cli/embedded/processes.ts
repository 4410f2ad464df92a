import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** Helpers for the child processes of `flightdeck start` and of the test harness. */

/** Whether a process exists and is not a zombie (exited, waiting for its parent to reap it). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    // /proc/<pid>/stat: "pid (comm) state ..."; comm may contain spaces, so read after the last ')'.
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true;
  }
}

function commandLine(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return '';
  }
}

export function readPid(file: string): number | undefined {
  try {
    const pid = Number.parseInt(fs.readFileSync(file, 'utf8').trim(), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Sends SIGTERM to a process (and its group, when it leads one), then SIGKILL after the grace
 * period. Resolves once it is gone.
 */
export async function terminate(pid: number, graceMs = 10_000): Promise<void> {
  const signal = (sig: NodeJS.Signals) => {
    try {
      process.kill(-pid, sig);
    } catch {
      try {
        process.kill(pid, sig);
      } catch {
        /* already gone */
      }
    }
  };
  if (!isAlive(pid)) return;
  signal('SIGTERM');
  const deadline = Date.now() + graceMs;
  while (isAlive(pid) && Date.now() < deadline) await sleep(100);
  if (isAlive(pid)) {
    signal('SIGKILL');
    while (isAlive(pid)) await sleep(50);
  }
}

/**
 * A process recorded in a pid file by an earlier run that did not stop cleanly (for example after
 * kill -9): stop it, but only if its command line still shows it is ours, so a reused pid of an
 * unrelated process is never touched.
 */
export async function stopLeftover(pidFile: string, marker: string): Promise<boolean> {
  const pid = readPid(pidFile);
  let stopped = false;
  if (pid !== undefined && isAlive(pid) && commandLine(pid).includes(marker)) {
    await terminate(pid);
    stopped = true;
  }
  fs.rmSync(pidFile, { force: true });
  return stopped;
}

/**
 * Niceness of the worker and the embedded Temporal server: below the API's (and PostgreSQL's, which
 * answers the API's queries), so on a busy machine agents' requests win the CPU over background work.
 */
export const BACKGROUND_NICENESS = 10;

/**
 * A command line that runs `file` at `niceness` (below the default priority) from its first
 * instruction, through `nice`. Lowering a running process's priority (os.setPriority on its pid)
 * would not do: on Linux niceness belongs to each thread, and only the main thread would change,
 * while a Go server's or Node's threads started before it kept the default.
 */
export function atNiceness(niceness: number, file: string, args: string[]): { file: string; args: string[] } {
  return { file: 'nice', args: ['-n', String(niceness), file, ...args] };
}

/**
 * Gives the session a detached child leads (`spawn` with `detached`) the same niceness. With
 * autogroup scheduling (/proc/sys/kernel/sched_autogroup_enabled, on by default in most
 * distributions' kernels) the CPU is shared between sessions before niceness counts within one, so a
 * niced worker in a session of its own would still get as much CPU as the API's session: measured
 * during the claims of `npm run bench -- pull`, the API waited a second per second for a CPU while
 * the niced worker and Temporal ran 900 ms per second. Best effort: without autogroups (or
 * without /proc) there is nothing to set, and `nice` is what counts.
 */
function lowerSessionPriority(pid: number, niceness: number): void {
  try {
    fs.writeFileSync(`/proc/${pid}/autogroup`, String(niceness));
  } catch {
    // No autogroup scheduling here: the process's own niceness is all there is.
  }
}

/**
 * Spawns `file` leading a session of its own (`detached`: a terminal's Ctrl-C reaches only us, and
 * we stop it in order), with `niceness` below the default priority when given: through `nice` from
 * its first instruction, and for its session's autogroup too (both above).
 */
export function spawnSession(
  file: string,
  args: string[],
  options: Omit<SpawnOptions, 'detached'> & { niceness?: number },
): ChildProcess {
  const { niceness, ...spawnOptions } = options;
  const command = niceness === undefined ? { file, args } : atNiceness(niceness, file, args);
  const child = spawn(command.file, command.args, { ...spawnOptions, detached: true });
  if (niceness !== undefined && child.pid !== undefined) lowerSessionPriority(child.pid, niceness);
  return child;
}

export function assertPortFree(host: string, port: number, hint: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', (error: NodeJS.ErrnoException) => {
      reject(
        new Error(
          error.code === 'EADDRINUSE'
            ? `Port ${host}:${port} is already in use. ${hint}`
            : `${error.message}. ${hint}`,
        ),
      );
    });
    server.listen(port, host, () => server.close(() => resolve()));
  });
}

/**
 * A port nobody listens on, drawn below Linux's ephemeral range (32768 and up). A port the OS picks for
 * `listen(0)` comes from that range, where it may hand the same port to an outgoing connection before
 * the caller binds it: that once took a benchmark's embedded Temporal's port. Ports below 32768 also
 * fit the full Temporal server's membership columns (SMALLINT).
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_768);
    try {
      await assertPortFree(host, port, '');
      return port;
    } catch {
      /* taken: draw again */
    }
  }
}

export function tail(file: string, bytes = 3000): string {
  try {
    const content = fs.readFileSync(file, 'utf8');
    return content.slice(-bytes).trim();
  } catch {
    return '';
  }
}
