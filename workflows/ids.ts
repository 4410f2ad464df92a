/** Deterministic workflow ids: a retried request or a re-delivered message never starts a duplicate. */
export const workflowIds = {
  versionRollout: (versionId: string) => `version-rollout/${versionId}`,
  targetRollout: (workspaceId: string) => `target-rollout/${workspaceId}`,
  release: (releaseId: string) => `release/${releaseId}`,
  lease: (jobId: string, claimId: string) => `lease/${jobId}/${claimId}`,
  hold: (holdId: string) => `hold/${holdId}`,
  rolloutWaves: (rolloutId: string) => `rollout-waves/${rolloutId}`,
  approvalScope: (approvalId: string, decision: number) => `approval-scope/${approvalId}/${decision}`,
  webhookDelivery: (deliveryId: string) => `webhook-delivery/${deliveryId}`,
  /** A runbook run's: open executions have this prefix, so it keeps the API's name for runbooks. */
  runbookRun: (runId: string) => `workflow-run/${runId}`,
};
