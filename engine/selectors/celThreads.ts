import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { OverBudgetError, UnavailableError } from '../../domain/errors';
import { FairSlots } from '../../domain/fairSlots';
import type { CelQuery, RecordScope } from '../../domain/selectors';
import type { RowBatch, RowShape, RowVerdicts, StoredRow } from './celRows';

/**
 * CEL given with a request, evaluated off the event loop (docs/security.md "CEL budget").
 * A neighbour's filter over large records is CPU work in pieces that cannot be divided (one record's
 * parse, one evaluation: up to ~10 ms each); on the event loop every agent's request waited behind
 * them. Here the rows go to threads as text, are parsed and judged there, and only the verdicts
 * come back. Workspaces share the threads fairly (domain/fairSlots.ts): one workspace's filters
 * never hold every thread. A thread is started on first use and closed after a minute without work.
 */
export class CelThreads {
  private readonly slots: FairSlots;
  private readonly idle: Worker[] = [];
  private idleTimer: NodeJS.Timeout | undefined;

  constructor(size: number) {
    this.slots = new FairSlots(size, Math.max(1, size - 1));
  }

  /** Whether each row matches `query`, charged to its budget; OverBudgetError (422) past the budget. */
  async matchRows(
    workspaceId: string,
    query: CelQuery<RecordScope>,
    rows: StoredRow[],
    shape: RowShape,
  ): Promise<boolean[]> {
    if (rows.length === 0) return [];
    const { limit, spent, evaluations } = query.budget;
    const batch: RowBatch = {
      scope: query.scope,
      expression: query.expression,
      budget: { limit, spent, evaluations },
      rows,
      shape,
    };
    const release = await this.slots.acquire(workspaceId);
    let verdicts: RowVerdicts;
    try {
      verdicts = await this.judge(batch);
    } finally {
      release();
    }
    if ('overBudget' in verdicts) throw new OverBudgetError(verdicts.overBudget);
    if ('failed' in verdicts) throw new Error(`a CEL filter failed: ${verdicts.failed}`);
    query.budget.spent = verdicts.spent;
    query.budget.evaluations = verdicts.evaluations;
    return verdicts.matched;
  }

  private async judge(batch: RowBatch): Promise<RowVerdicts> {
    clearTimeout(this.idleTimer);
    const thread = this.idle.pop() ?? this.start();
    const verdicts = await new Promise<RowVerdicts>((resolve, reject) => {
      const settle = () => {
        thread.off('message', onMessage);
        thread.off('error', onError);
        thread.off('exit', onExit);
      };
      const onMessage = (answer: RowVerdicts) => {
        settle();
        resolve(answer);
      };
      const onError = (error: Error) => {
        settle();
        void thread.terminate();
        reject(new UnavailableError(`the filter's evaluation stopped: ${error.message}`));
      };
      const onExit = (code: number) => onError(new Error(`its thread exited (${code})`));
      thread.on('message', onMessage);
      thread.on('error', onError);
      thread.on('exit', onExit);
      thread.postMessage(batch);
    });
    this.idle.push(thread);
    this.idleTimer = setTimeout(() => this.closeIdle(), IDLE_CLOSE_MS).unref();
    return verdicts;
  }

  private start(): Worker {
    const thread = startThread();
    // A thread that dies while waiting leaves the idle list (its error is answered by its exit).
    thread.on('error', () => undefined);
    thread.on('exit', () => {
      const index = this.idle.indexOf(thread);
      if (index >= 0) this.idle.splice(index, 1);
    });
    return thread;
  }

  private closeIdle(): void {
    for (const thread of this.idle.splice(0)) void thread.terminate();
  }
}

/** How long threads without work stay up: their memory goes back once filters stop. */
const IDLE_CLOSE_MS = 60_000;

/** A thread's heap: a batch is at most a few hundred kilobytes of rows (application/common.ts). */
const THREAD_HEAP_MB = 256;

function startThread(): Worker {
  // Compiled (dist/) the thread is plain JavaScript; from source (tests, tsx) it is loaded through tsx.
  const compiled = __filename.endsWith('.js');
  const thread = new Worker(path.join(__dirname, `celThread.${compiled ? 'js' : 'ts'}`), {
    execArgv: compiled ? [] : ['--require', require.resolve('tsx/cjs')],
    resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB },
  });
  // Waiting threads never keep the process up.
  thread.unref();
  return thread;
}

/** One thread per core but the one the event loop runs on, at least one, at most four. */
const THREAD_COUNT = Math.min(4, Math.max(1, os.availableParallelism() - 1));

let shared: CelThreads | undefined;

/** The process's threads for request CEL. */
export function celThreads(): CelThreads {
  shared ??= new CelThreads(THREAD_COUNT);
  return shared;
}
