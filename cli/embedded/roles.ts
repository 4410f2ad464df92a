import type { DefaultWorkspace } from '../bootstrap';
import { spawnSession, terminate } from './processes';

/**
 * The child processes of `flightdeck start`: the database's preparation (`flightdeck prepare`, which
 * ends once it has reported), then the worker (`flightdeck worker`), each started from the same entry
 * point as the start process (compiled or through tsx) with the environment it is given. The API runs
 * in the start process itself (cli/commands/start.ts).
 */

export type Role = 'prepare' | 'worker';

/**
 * What a role process tells `flightdeck start` once it serves, or, preparing, once it is done
 * (cli/commands/roleProcess.ts `reportReady`).
 */
export type RoleReady =
  { role: 'prepare'; workspace: DefaultWorkspace } | { role: 'worker'; metricsUrl?: string };

export interface RoleProcess<R extends Role> {
  pid: number;
  /** Resolves with the process's report once it serves; rejects if it exits first. */
  ready: Promise<Extract<RoleReady, { role: R }>>;
  /** Resolves when the process has exited, saying how (`exit code 1`, `signal SIGKILL`). */
  exited: Promise<string>;
  /** SIGTERM, then SIGKILL after the grace period; resolves once it is gone. */
  stop(): Promise<void>;
}

const NAMES: Record<Role, string> = {
  prepare: 'The database preparation',
  worker: 'The worker',
};

/**
 * Starts `flightdeck <role>`: in a process group of its own, so a terminal's Ctrl-C reaches only
 * the start process, which stops its children in order; with `niceness`, below the default
 * priority from its first instruction (cli/embedded/processes.ts `atNiceness`). Its output goes
 * where the start process's goes; its report comes over an IPC channel it closes once it has sent it.
 */
export function spawnRole<R extends Role>(
  role: R,
  options: {
    env: NodeJS.ProcessEnv;
    niceness?: number;
    graceMs: number;
    heapMb?: number;
    semiSpaceMb?: number;
  },
): RoleProcess<R> {
  // The same runtime flags (tsx's loader, say), but no second debugger on the same port.
  const nodeArgs = process.execArgv.filter((arg) => !arg.startsWith('--inspect'));
  if (options.heapMb !== undefined) nodeArgs.push(`--max-old-space-size=${options.heapMb}`);
  if (options.semiSpaceMb !== undefined) nodeArgs.push(`--max-semi-space-size=${options.semiSpaceMb}`);
  const child = spawnSession(process.execPath, [...nodeArgs, process.argv[1]!, role], {
    env: options.env,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    ...(options.niceness === undefined ? {} : { niceness: options.niceness }),
  });
  const exited = new Promise<string>((resolve) => {
    child.once('exit', (code, signal) => resolve(signal ? `signal ${signal}` : `exit code ${code}`));
  });
  const ready = new Promise<Extract<RoleReady, { role: R }>>((resolve, reject) => {
    child.once('error', reject);
    child.on('message', (message: RoleReady) => {
      if (message.role === role) resolve(message as Extract<RoleReady, { role: R }>);
    });
    void exited.then((how) => reject(new Error(`${NAMES[role]} exited during start-up (${how})`)));
  });
  // Whoever awaits `ready` sees its failure; a stop after a failed start must not also report it.
  ready.catch(() => undefined);
  if (child.pid === undefined) throw new Error(`Could not start ${NAMES[role].toLowerCase()}`);
  const pid = child.pid;
  return {
    pid,
    ready,
    exited,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      await terminate(pid, options.graceMs);
      await exited;
    },
  };
}
