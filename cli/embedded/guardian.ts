import { spawn } from 'node:child_process';
import type { Socket } from 'node:net';

/**
 * A watchdog for child servers (of `flightdeck start`, and of the test harness). It runs in its own
 * process group and reads its parent's instructions from a pipe; when the pipe closes because the
 * parent exited, even by kill -9, it signals the registered processes and, after each one's grace,
 * kills those still running. After a clean stop the parent releases it first, so it never touches a
 * restarted stack.
 *
 * It is a POSIX shell script rather than a second Node.js process: it waits, almost always for
 * nothing, beside every stack, and a shell does that in 1–2 MB where Node.js takes 40 MB
 * (ARCHITECTURE.md, "The processes of `flightdeck start`").
 */

export interface Guarded {
  pid: number;
  /** What asks it to stop: SIGTERM unless said (PostgreSQL's fast shutdown is SIGINT). */
  signal?: 'TERM' | 'INT';
  /** How long it may take before it is killed. */
  graceMs?: number;
}

export interface Guardian {
  /** The guardian's own process: once it is gone, it can signal nothing more. */
  readonly pid: number | undefined;
  watch(...guarded: Guarded[]): void;
  release(): void;
}

const DEFAULT_GRACE_MS = 10_000;

/**
 * Lines `watch <pid> <signal> <grace in tenths of a second>`, or `release`; at end of input the
 * parent is gone. A process is signalled with its group when it leads one (every server here
 * does), else alone; a zombie counts as gone.
 */
const GUARDIAN_SCRIPT = `
watched=''
while read -r verb pid signal grace; do
  case "$verb" in
    release) exit 0 ;;
    watch) watched="$watched $pid:$signal:$grace" ;;
  esac
done
alive() {
  read -r stat 2>/dev/null < "/proc/$1/stat" || return 1
  state=\${stat##*) }
  [ "\${state%% *}" != Z ]
}
stop() { kill -s "$2" -- "-$1" 2>/dev/null || kill -s "$2" "$1" 2>/dev/null; }
for entry in $watched; do
  rest=\${entry#*:}
  stop "\${entry%%:*}" "\${rest%%:*}"
done
tenths=0
while :; do
  waiting=''
  for entry in $watched; do
    pid=\${entry%%:*}
    alive "$pid" || continue
    if [ "$tenths" -ge "\${entry##*:}" ]; then stop "$pid" KILL; else waiting=yes; fi
  done
  [ -z "$waiting" ] && exit 0
  sleep 0.1
  tenths=$((tenths + 1))
done
`;

export function startGuardian(): Guardian {
  const child = spawn('/bin/sh', ['-c', GUARDIAN_SCRIPT], {
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  child.unref();
  // A pipe to a child is a socket: unreferenced, it keeps no parent alive.
  const input = child.stdin as Socket;
  // A guardian that is gone (released, or killed by someone) must not take its parent with it.
  input.on('error', () => undefined);
  input.unref();
  const send = (line: string) => {
    if (!input.destroyed && input.writable) input.write(`${line}\n`);
  };
  return {
    pid: child.pid,
    watch: (...guarded) => {
      for (const { pid, signal = 'TERM', graceMs = DEFAULT_GRACE_MS } of guarded) {
        send(`watch ${pid} ${signal} ${Math.ceil(graceMs / 100)}`);
      }
    },
    release: () => {
      send('release');
      input.end();
    },
  };
}
