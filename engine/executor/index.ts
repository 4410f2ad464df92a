/** The executor's front door: every write the engine's decisions lead to (jobs, holds, fan-out, completion). */
export { recordApprovalScope } from './approvalScopes';
export { applyHold, releaseHold } from './holdEffects';
export { startReleaseJobs } from './jobCreation';
export { withPlanValidation } from './planValidation';
export { finishRelease, type FinalPhase } from './releaseCompletion';
export { BATCH_RESOURCE_BYTES, rollOutPendingTargets, rollOutVersionBatch } from './releaseFanout';
export { requestRedeploy } from './releaseRedeploy';
export {
  advanceRollout,
  rolloutWake,
  joinRollouts,
  rollBackRollout,
  wakeRolloutsOf,
  wakeRolloutsOfVersion,
} from './rollouts';
export { appendMeasurement, recordEvaluation, releaseProgress, settleVerification } from './releaseSteps';
export { finishRunbookRun, runbookRunJobs } from './runbookRunSteps';
export { abandonDelivery, deliveryToSend, recordDeliveryAttempt } from './webhookDeliveries';
