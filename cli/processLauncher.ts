import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { BoundedProcessOutcome, BoundedProcessRequest } from './boundedProcess';

type Answer = { id: number; outcome: BoundedProcessOutcome } | { id: number; error: string };

/**
 * Starts short processes from a thread of their own. Node's `spawn` returns only once the child has
 * called `exec`: 9–30 ms of a blocked event loop on an idle two-core machine, more when the CPU is
 * busy, and every request the process serves waited that long each time a tenant's policy was
 * checked (docs/security.md "OPA sandbox"). Here the thread waits instead. It is started on
 * first use and keeps the process up only while a process runs.
 */
export class ProcessLauncher {
  private thread: Worker | undefined;
  private nextId = 0;
  private readonly pending = new Map<
    number,
    { resolve: (outcome: BoundedProcessOutcome) => void; reject: (error: Error) => void }
  >();

  run(request: BoundedProcessRequest): Promise<BoundedProcessOutcome> {
    const thread = this.started();
    const id = this.nextId++;
    // The thread keeps the process up only while a process runs.
    if (this.pending.size === 0) thread.ref();
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      thread.postMessage({ id, request });
    });
  }

  private started(): Worker {
    if (this.thread) return this.thread;
    // Compiled (dist/) the thread is plain JavaScript; from source (tests, tsx) it is loaded through tsx.
    const compiled = __filename.endsWith('.js');
    const thread = new Worker(path.join(__dirname, `processThread.${compiled ? 'js' : 'ts'}`), {
      execArgv: compiled ? [] : ['--require', require.resolve('tsx/cjs')],
    });
    thread.on('message', (answer: Answer) => {
      const waiter = this.pending.get(answer.id);
      this.pending.delete(answer.id);
      if (this.pending.size === 0) thread.unref();
      if ('error' in answer) waiter?.reject(new Error(answer.error));
      else waiter?.resolve(answer.outcome);
    });
    const fail = (error: Error) => {
      this.thread = undefined;
      for (const waiter of this.pending.values()) waiter.reject(error);
      this.pending.clear();
    };
    thread.on('error', fail);
    thread.on('exit', (code) => fail(new Error(`the process launcher's thread exited (${code})`)));
    this.thread = thread;
    return thread;
  }
}
