import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';

const steps = proxyActivities<Activities>({
  // Planning every target of an environment: minutes at most for tens of thousands of targets.
  startToCloseTimeout: '15 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

export interface ApprovalScopeWorkflowInput {
  approvalId: string;
  decision: number;
}

/**
 * `approval-scope/<approvalId>/<decision>`: records what an approval covers, the digests of what its
 * targets would ship at the decision (engine/executor/approvalScopes.ts), then wakes the releases
 * waiting for it. Apart from the request that approved, so approving ten thousand targets costs the
 * request nothing.
 */
export async function approvalScopeWorkflow(input: ApprovalScopeWorkflowInput): Promise<void> {
  await steps.recordApprovalScope(input.approvalId, input.decision);
}
