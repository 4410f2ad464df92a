import type { WorkerOptions } from '@temporalio/worker';

/**
 * How a worker is sized. Each value was chosen by measurement on a 2-core machine (bench/fanout;
 * ARCHITECTURE.md, "Worker tuning", has the figures and the reasons).
 */

/**
 * Workflow tasks run at once. The relay starts releases a few at a time while a fan-out is being
 * written (worker/outboxRelay.ts), so a burst of eager starts fits in 50 slots; 200 slots raised
 * the worker's peak at 5,000 targets from 668 to 754 MB and drained no faster (bench/scale).
 */
export const WORKFLOW_TASK_SLOTS = 50;
/** Concurrent polls for workflow tasks (those not handed over by an eager start). */
export const WORKFLOW_TASK_POLLS = 10;

/**
 * Memory a cached release workflow holds: a worker's RSS grew by about 330 KB per release workflow
 * it had cached (bench/fanout, 1,000 targets), with rrule and cel-js shared by all of them
 * (worker/workflowSource.ts) and zod kept out of the workflow bundle.
 */
export const CACHED_WORKFLOW_KB = 350;
/**
 * The workflow cache's share of a worker's memory, unless FLIGHTDECK_WORKER_CACHE_MB says
 * otherwise: the floor, as many workflows as task slots (50). A release evicted while it waits for
 * its job is rebuilt from its six history events when woken, so a larger cache buys little: at
 * 10,000 targets, 200 MB instead of 100 MB raised the worker's peak from 696 to 848 MB and `flightdeck
 * start`'s idle RSS from 303 to 698 MB, and made the fan-out no faster (bench/fanout, runs on two
 * days); 64 instead of 100 took the worker's idle RSS after bench/pull from 436 to 382 MB, and 16
 * instead of 64 from 313 to 289 MB (quick runs back to back), claims, fan-outs and drain no slower.
 */
export const DEFAULT_WORKFLOW_CACHE_MB = 16;

/**
 * The worker's V8 heap, as `flightdeck start` runs it (FLIGHTDECK_WORKER_HEAP_MB). Left to itself V8
 * lets the heap of a worker starting 20,000 releases grow to several times what it holds live; the
 * cache above, the lease and rollout workers' caches and a rollout's batches stay well under this.
 * bench/trailing (two 10,000-target fan-outs, then a version, an approval and 1,000 expiring leases
 * while the starts trail): the worker's peak RSS 899–927 MB without a limit, 560 MB at 512 and
 * 518 MB at 384, with the fan-outs, the version behind the trailing work and the reaper no slower;
 * bench/scale (100,000 targets) peaked at 389 MB with it and the two settings around it.
 */
export const DEFAULT_WORKER_HEAP_MB = 384;

/**
 * The young generation of each of the worker's V8 heaps (its main thread and each worker's workflow
 * thread), as `flightdeck start` runs it: V8's default of 16 MB a semi-space lets four heaps hold
 * close to 200 MB of young objects that the next scavenge would free. bench/pull (a 10,000-target
 * fan-out, then idle): the worker's idle RSS 436 MB with the heap at 384 MB and 4 here, 469–482 MB
 * at 512 and V8's default; later 272 MB with 2 here instead of 289 with 4 (quick runs back to back,
 * its peak 288 instead of 305 MB); claims, fan-out and drain no slower, the worker's CPU per job no
 * higher (2.0 and 2.2 ms).
 */
export const WORKER_SEMI_SPACE_MB = 2;

/**
 * glibc's malloc thresholds for the worker's native threads (Temporal core's), as `flightdeck start`
 * runs it unless they are set: fixed at glibc's initial 128 KB. Left dynamic, glibc raises both after
 * a large block is freed, up to 32 MB for the mapping threshold, and then keeps what a fan-out's
 * histories freed instead of returning it.
 */
export function workerMallocEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return {
    MALLOC_MMAP_THRESHOLD_: env.MALLOC_MMAP_THRESHOLD_ ?? '131072',
    MALLOC_TRIM_THRESHOLD_: env.MALLOC_TRIM_THRESHOLD_ ?? '131072',
  };
}

/** Workflows kept in memory for a cache budget: never fewer than the workflow task slots. */
export function cachedWorkflowsFor(cacheMb: number): number {
  return Math.max(WORKFLOW_TASK_SLOTS, Math.floor((cacheMb * 1024) / CACHED_WORKFLOW_KB));
}

export function workerTuning(cacheMb = DEFAULT_WORKFLOW_CACHE_MB): Partial<WorkerOptions> {
  return {
    maxConcurrentWorkflowTaskExecutions: WORKFLOW_TASK_SLOTS,
    maxConcurrentWorkflowTaskPolls: WORKFLOW_TASK_POLLS,
    maxCachedWorkflows: cachedWorkflowsFor(cacheMb),
  };
}

/**
 * The rollout worker (worker/taskQueues.ts): a rollout's work is in its activity, one transaction per
 * batch, so a few rollouts at a time (several workspaces' at once) keep PostgreSQL busy without
 * crowding each other, and a handful of cached workflows keeps them all.
 */
export function rolloutWorkerTuning(): Partial<WorkerOptions> {
  return {
    maxConcurrentWorkflowTaskExecutions: 4,
    maxConcurrentWorkflowTaskPolls: 2,
    maxConcurrentActivityTaskExecutions: 4,
    maxConcurrentActivityTaskPolls: 2,
    maxCachedWorkflows: 20,
  };
}

/**
 * The lease worker (worker/taskQueues.ts): a lease's tasks are short (a timer, a sweep); a small
 * cache keeps the open leases of a burst of claims without evicting them.
 */
export function leaseWorkerTuning(): Partial<WorkerOptions> {
  return {
    maxConcurrentWorkflowTaskExecutions: 20,
    maxConcurrentWorkflowTaskPolls: 4,
    maxCachedWorkflows: 200,
  };
}

/**
 * The webhook worker (worker/taskQueues.ts): each attempt holds an activity slot for at most its
 * request's timeout (domain/webhookAttempts.ts), so a few slots bound what receivers can hold of the
 * worker, and Temporal hands a freed slot to the workspaces in turn (worker/orchestrationDispatch.ts).
 * A delivery's workflow only schedules its attempt and ends, so few workflow slots and a small cache
 * serve it.
 */
export function webhookWorkerTuning(): Partial<WorkerOptions> {
  return {
    maxConcurrentWorkflowTaskExecutions: 4,
    maxConcurrentWorkflowTaskPolls: 2,
    maxConcurrentActivityTaskExecutions: 10,
    maxConcurrentActivityTaskPolls: 2,
    maxConcurrentLocalActivityExecutions: 4,
    maxCachedWorkflows: 20,
  };
}
