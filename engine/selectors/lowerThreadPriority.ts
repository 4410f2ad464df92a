import fs from 'node:fs';
import os from 'node:os';

/** Below the API's event loop, as `opa` processes are (cli/opa.ts). */
const CEL_THREAD_NICENESS = 10;

/**
 * Lowers the priority of the thread that loads this module. On Linux a thread has a priority of its
 * own. Imported first by a CEL thread (engine/selectors/celThread.ts): loading the CEL library is
 * the thread's dearest work (a neighbour's first filter starts the threads), and it then already
 * yields the CPU to the event loop that serves requests.
 */
try {
  const threadId = Number(fs.readlinkSync('/proc/thread-self').split('/').pop());
  os.setPriority(threadId, CEL_THREAD_NICENESS);
} catch {
  // No per-thread priority here (not Linux): the thread runs at the process's.
}
