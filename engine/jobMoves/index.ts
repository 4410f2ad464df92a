/**
 * Every move of a job's status, and nothing else, writes `job.status` (a unit test fails on a raw
 * status update anywhere else): each move is checked against the move table of
 * domain/jobStatus.ts and the claim lifecycle's transition table of domain/claimLifecycle.ts, and
 * performs its side effects (a claim's end with its lease workflow, the release's wake) in the same
 * transaction. The claim lifecycle's statements — claim, heartbeat, expiry, delivery cap — are
 * claims.ts; its graceful cancel cancel.ts; reports and requeues change.ts.
 */
export { changeJobStatus, type JobMoveEvent, type JobScope, type JobStatusChange } from './change';
export { cancelOpenJobs } from './cancel';
export {
  claimJob,
  expireLapsedClaims,
  extendLease,
  readClaim,
  type ExpiredClaim,
  type ClaimOutcome,
  type ClaimRequest,
  type LeaseGrant,
  type LeaseState,
} from './claims';
export { moveDispatchedJob } from './dispatch';
export {
  POLL_COUNT_AHEAD,
  assertCallerMayAct,
  jobAgentTypeOf,
  legacyQueueJobs,
  pollJobs,
  readPullAgent,
  type AgentCaller,
  type PollItem,
  type PullAgent,
} from './pull';
