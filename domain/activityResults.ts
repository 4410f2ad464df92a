import type { ReleaseFacts } from './gates';
import type { JobStatus } from './jobStatus';
import type { JobRef } from './orchestration';
import type { ReleasePhase } from './releases';
import type { ReleaseTargetRef } from './releaseTargets';
import type { RunJobState, RunbookRunStatus } from './runbookRunProgress';

/*
 * What the activities answer the workflows. Each value is recorded in the workflow's history and
 * read back from it on replay, so these shapes are part of the replay contract: a field may be
 * added (optional, read with a default where histories lack it), never renamed, retyped or
 * removed while a history that has it can still replay (ARCHITECTURE.md, "Changing workflow code").
 * The activities (activities/) and the engine functions behind them answer in these types.
 */

/**
 * A release and everything its gates depend on, read in one place (engine/eligibility/releaseFacts.ts)
 * so the history records exactly what each evaluation saw.
 */
export interface LoadedRelease {
  releaseId: string;
  workspaceId: string;
  phase: ReleasePhase;
  redeployRequested: boolean;
  /**
   * Whether that redeploy overrides the policies. Absent in histories recorded before overrides
   * existed, when every redeploy did: read as true there, so they replay the same.
   */
  redeployOverridesPolicies?: boolean;
  /** The highest job attempt so far (0 before the first jobs). */
  lastAttempt: number;
  /** The release target (absent from activity results recorded before it was added). */
  target?: ReleaseTargetRef;
  facts: ReleaseFacts;
}

/** A release's jobs for an attempt: started, or not now because another release holds the target. */
export type StartJobsResult =
  | { outcome: 'started'; attempt: number; jobs: JobRef[] }
  | { outcome: 'busy'; holder: string | null }
  | { outcome: 'finished' };

/** What dispatching a job did, and what the release workflow does next. */
export type DispatchResult =
  /** Waiting for a pull agent to claim it. */
  | { kind: 'queued' }
  /** Handed to an external system; its status comes back by webhook, or by `follow` on a timer. */
  | { kind: 'triggered' }
  /** To be completed by the workflow after a delay (the test runner). */
  | { kind: 'scheduled'; afterSeconds: number; status: JobStatus; message: string | null }
  /** The job ended during dispatch (an invalid configuration, say). */
  | { kind: 'ended'; status: JobStatus }
  /**
   * A push agent's dispatch takes several calls to its service: the release workflow executes the
   * next step as its own activity, so each call shows in the history and retries alone.
   */
  | { kind: 'next'; step: DispatchStep };

/** Where a multi-step dispatch goes on: the step's name and what earlier steps learnt (ids, never secrets). */
export interface DispatchStep {
  name: string;
  state: Record<string, string>;
}

/** One look at a pushed job's remote run: `done` once the job has ended; `changed` if the job moved. */
export interface FollowResult {
  done: boolean;
  changed?: boolean;
}

/** The outcome of one measurement of a verification metric. */
export interface MeasurementResult {
  passed: boolean;
  error?: string;
}

/** A rollout's batches taken by one activity: the cursor of the next batch, if any, and releases created. */
export interface VersionBatchesResult {
  next?: string;
  created: number;
}

/** A workspace's new targets taken by one activity: releases created, `more` when others may wait. */
export interface PendingTargetsResult {
  created: number;
  more: boolean;
}

/** A live claim's time left, as the lease workflow reads it. */
export interface ClaimReading {
  remainingMs: number;
}

/** Where a lapsed lease's sweep left its claim. */
export type SweepOutcome = 'expired' | 'gone' | 'held';

/** A runbook run's status and its jobs, as its workflow follows them. */
export interface RunbookRunJobs {
  status: RunbookRunStatus;
  jobs: RunJobState[];
}

/** A hold applied as it stands: when it next changes by itself (absent: never, or it is gone). */
export interface HoldApplied {
  nextChangeAt?: string;
}

/** A rollout in waves advanced one step (engine/executor/rollouts.ts `advanceRollout`). */
export interface RolloutAdvance {
  /** When the rollout changes by itself next (a bake ends): its workflow sleeps until then, or a wake. */
  nextChangeAt?: string;
  /** The rollout is over (completed or aborted): its workflow ends. */
  done: boolean;
}

/** An approval's scope: whether it was recorded (not when the decision was replaced meanwhile), its size, the releases woken. */
export interface ApprovalScopeRecorded {
  recorded: boolean;
  digests: number;
  releasesWoken: number;
}
