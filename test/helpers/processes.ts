import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { atNiceness, spawnSession } from '../../cli/embedded/processes';
import { harnessValue } from '../harness';
import type { TestStack } from './stack';

const ROOT = path.resolve(__dirname, '..', '..');

/** How a child process runs: its environment, output, process group and CPU priority. */
export interface SpawnChildOptions {
  env?: NodeJS.ProcessEnv;
  /** 'pipe' to read what it prints, 'inherit' to show its log (errors only, at the tests' level). */
  stdout?: 'ignore' | 'pipe' | 'inherit';
  /** 'pipe' to read its errors (default: the test's stderr). */
  stderr?: 'inherit' | 'pipe';
  /** Its own process group, so that `killGroup` takes its children with it. */
  detached?: boolean;
  /** Below the default CPU priority, as `flightdeck start` runs its background roles. */
  niceness?: number;
}

/**
 * Runs `flightdeck <args>` from source as a child process on the stack's database, Temporal and
 * task queue, as an operator would run it: for tests that kill processes or watch them die.
 */
export function spawnFlightdeck(
  stack: TestStack,
  args: string[],
  options: SpawnChildOptions = {},
): ChildProcess {
  return spawnScript(stack, path.join(ROOT, 'cli', 'main.ts'), args, options);
}

/** Runs a TypeScript entry from source as `spawnFlightdeck` runs the CLI: same environment, same options. */
export function spawnScript(
  stack: TestStack,
  script: string,
  args: string[],
  options: SpawnChildOptions = {},
): ChildProcess {
  const [file, ...nodeArgs] = [process.execPath, '--import', 'tsx', script, ...args];
  const spawnOptions: SpawnOptions = {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: stack.db.url,
      TEMPORAL_ADDRESS: harnessValue('temporalAddress'),
      TEMPORAL_TASK_QUEUE: stack.taskQueue,
      FLIGHTDECK_SECRET_KEY: stack.secretKey,
      LOG_LEVEL: 'error',
      // Several processes run at once here: none takes the default metrics port unless told to.
      FLIGHTDECK_METRICS_PORT: 'off',
      ...options.env,
    },
    stdio: ['ignore', options.stdout ?? 'ignore', options.stderr ?? 'inherit'],
  };
  if (options.detached) {
    return spawnSession(file!, nodeArgs, {
      ...spawnOptions,
      ...(options.niceness === undefined ? {} : { niceness: options.niceness }),
    });
  }
  const command =
    options.niceness === undefined
      ? { file: file!, args: nodeArgs }
      : atNiceness(options.niceness, file!, nodeArgs);
  return spawn(command.file, command.args, spawnOptions);
}

/** Kills a detached child and everything it started, as a machine's death would. */
export function killGroup(child: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): void {
  if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
    process.kill(-child.pid, signal);
  }
}

/** Resolves when the child has exited (at once if it already has). */
export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** A TCP port nobody listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
