import fs from 'node:fs';
import os from 'node:os';
import { parentPort } from 'node:worker_threads';
import { judgeRows, type RowBatch } from './celRows';

/** Below the API's event loop, as `opa` processes are (cli/opa.ts). */
const CEL_THREAD_NICENESS = 10;

/**
 * A thread of `CelThreads`: judges the batches of rows it is sent, one at a time. On Linux a thread
 * has a priority of its own; this one yields the CPU to the event loop that serves requests.
 */
try {
  const threadId = Number(fs.readlinkSync('/proc/thread-self').split('/').pop());
  os.setPriority(threadId, CEL_THREAD_NICENESS);
} catch {
  // No per-thread priority here (not Linux): the thread runs at the process's.
}

parentPort!.on('message', (batch: RowBatch) => parentPort!.postMessage(judgeRows(batch)));
