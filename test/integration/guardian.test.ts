import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { isAlive } from '../../cli/embedded/processes';
import { eventually } from '../helpers/eventually';

/**
 * The watchdog of `flightdeck start` (cli/embedded/guardian.ts): a parent killed with kill -9 leaves
 * nothing behind, a process that ignores its stop signal is killed after its grace, and a released
 * guardian touches nothing.
 */

const GUARDIAN = path.resolve(__dirname, '..', '..', 'cli', 'embedded', 'guardian.ts');

/** A process in a group of its own, as the stack's servers run; `ignoring` makes it ignore that signal. */
function server(ignoring?: 'TERM' | 'INT'): ChildProcess {
  const script = `${ignoring ? `trap '' ${ignoring}; ` : ''}exec sleep 300`;
  const child = spawn('/bin/sh', ['-c', script], { detached: true, stdio: 'ignore' });
  child.unref();
  return child;
}

/**
 * A parent that starts a guardian, has it watch what it is told, prints "watching" and its
 * guardian's pid, and waits; on a line on its input it releases the guardian and exits.
 */
function parent(
  watched: { pid: number; signal?: 'TERM' | 'INT'; graceMs?: number }[],
): Promise<ChildProcess & { guardianPid: number }> {
  const script = `
    const { startGuardian } = require(${JSON.stringify(GUARDIAN)});
    const guardian = startGuardian();
    guardian.watch(...${JSON.stringify(watched)});
    process.stdout.write('watching ' + guardian.pid + '\\n');
    process.stdin.once('data', () => { guardian.release(); setTimeout(() => process.exit(0), 200); });
  `;
  const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the parent exited with ${code}`)));
    child.stdout!.once('data', (line: Buffer) =>
      resolve(Object.assign(child, { guardianPid: Number(/watching (\d+)/.exec(String(line))![1]) })),
    );
  });
}

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
}

describe('guardian', () => {
  const started: ChildProcess[] = [];
  afterEach(() => {
    for (const child of started.splice(0)) {
      if (child.pid !== undefined && isAlive(child.pid)) process.kill(-child.pid, 'SIGKILL');
    }
  });
  const watch = (ignoring?: 'TERM' | 'INT') => {
    const child = server(ignoring);
    started.push(child);
    return child.pid!;
  };

  it('stops every watched process when its parent is killed, a stubborn one after its grace', async () => {
    const plain = watch();
    // Ignores SIGTERM: it stops in time only if it is sent the signal it was registered with.
    const byInterrupt = watch('TERM');
    const stubborn = watch('TERM');
    const guarding = await parent([
      { pid: plain },
      { pid: byInterrupt, signal: 'INT' },
      { pid: stubborn, graceMs: 1_000 },
    ]);
    const killedAt = Date.now();
    guarding.kill('SIGKILL');
    await exited(guarding);
    await eventually(() => !isAlive(plain) && !isAlive(byInterrupt), {
      what: 'the plain and interrupted processes to stop',
      timeoutMs: 5_000,
    });
    expect(isAlive(stubborn)).toBe(true);
    await eventually(() => !isAlive(stubborn), {
      what: 'the stubborn process to be killed',
      timeoutMs: 10_000,
    });
    expect(Date.now() - killedAt).toBeGreaterThanOrEqual(1_000);
  });

  it('touches nothing once released', async () => {
    const pid = watch();
    const guarding = await parent([{ pid }]);
    guarding.stdin!.write('release\n');
    await exited(guarding);
    // Once the guardian itself is gone, nothing of it is left to signal the process later.
    await eventually(() => !isAlive(guarding.guardianPid), { what: 'the released guardian to exit' });
    expect(isAlive(pid)).toBe(true);
  });
});
