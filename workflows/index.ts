// The worker bundles this file and everything it imports into the workflow sandbox: import only
// deterministic code here (domain/, @temporalio/workflow), never I/O.
export { approvalScopeWorkflow } from './approvalScope';
export { holdWorkflow } from './hold';
export { leaseWorkflow } from './lease';
export { releaseWorkflow } from './release';
export { targetRolloutWorkflow, versionRolloutWorkflow } from './rollout';
export { rolloutWavesWorkflow } from './rolloutWaves';
// A runbook run's workflow; its exported name is its Temporal workflow type, recorded in histories.
export { workflowRunWorkflow } from './runbookRun';
export { webhookDeliveryWorkflow } from './webhookDelivery';
