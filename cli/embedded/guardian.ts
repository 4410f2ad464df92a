import { spawn } from 'node:child_process';

/**
 * A watchdog for child servers (of `flightdeck start`, and of the test harness). It runs in its own
 * process group with an IPC channel to its parent; when the channel closes because the parent
 * exited, even by kill -9, it terminates the registered processes and runs the registered stop
 * commands. After a clean stop the parent releases it first, so it never touches a restarted stack.
 *
 * The watchdog is a self-contained script run with `node -e`, so it works the same whether the
 * parent runs compiled code, TypeScript through tsx, or jest.
 */

export interface StopCommand {
  file: string;
  args: string[];
  uid?: number;
  gid?: number;
}

export interface Guarded {
  pids?: number[];
  commands?: StopCommand[];
}

export interface Guardian {
  watch(guarded: Guarded): void;
  release(): void;
}

type GuardianMessage = { kind: 'watch'; guarded: Guarded } | { kind: 'release' };

const GUARDIAN_SCRIPT = `
const { spawnSync } = require('node:child_process');
const pids = new Set();
const commands = [];
const fs = require('node:fs');
const alive = (pid) => {
  try { const stat = fs.readFileSync('/proc/' + pid + '/stat', 'utf8'); return stat[stat.lastIndexOf(')') + 2] !== 'Z'; }
  catch { try { process.kill(pid, 0); return true; } catch (e) { return e.code === 'EPERM'; } }
};
const signal = (pid, sig) => { try { process.kill(-pid, sig); } catch { try { process.kill(pid, sig); } catch {} } };
process.on('message', (m) => {
  if (m.kind === 'release') process.exit(0);
  for (const pid of m.guarded.pids || []) pids.add(pid);
  commands.push(...(m.guarded.commands || []));
});
process.on('disconnect', () => {
  for (const pid of pids) signal(pid, 'SIGTERM');
  for (const c of commands) spawnSync(c.file, c.args, { stdio: 'ignore', uid: c.uid, gid: c.gid, timeout: 30000 });
  const deadline = Date.now() + 10000;
  const wait = () => {
    const left = [...pids].filter(alive);
    if (left.length === 0) process.exit(0);
    if (Date.now() > deadline) { left.forEach((pid) => signal(pid, 'SIGKILL')); process.exit(0); }
    setTimeout(wait, 100);
  };
  wait();
});
`;

export function startGuardian(): Guardian {
  const child = spawn(process.execPath, ['-e', GUARDIAN_SCRIPT], {
    detached: true,
    stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
  });
  child.unref();
  child.channel?.unref();
  const send = (message: GuardianMessage, then?: () => void) => {
    if (child.connected) child.send(message, then);
  };
  return {
    watch: (guarded) => send({ kind: 'watch', guarded }),
    release: () => send({ kind: 'release' }, () => child.connected && child.disconnect()),
  };
}
