import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { GateEvaluation } from '../domain/gates';
import type { ReleasePhase } from '../domain/releases';

/** Signals and queries, defined once for the workflows that handle them and the clients that send them. */

/** "Look again": something the release depends on changed (a job, an approval, the target). */
export const wakeSignal = defineSignal('wake');

export interface ReleaseView {
  releaseId: string;
  phase: ReleasePhase | 'unknown';
  evaluation: GateEvaluation | null;
  attempt: number;
  jobIds: string[];
}

/** Why a release waits, each rule's state and the next evaluation time; or what it runs. */
export const releaseStateQuery = defineQuery<ReleaseView>('releaseState');

/**
 * The heartbeat timeout of every ordinary activity (the worker heartbeats them every 2 s, see
 * worker/activityHeartbeats.ts): a worker that dies mid-activity is noticed this soon.
 */
export const HEARTBEAT_TIMEOUT = '10 seconds';
