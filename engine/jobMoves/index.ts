/**
 * Every move of a job's status, and nothing else, writes `job.status` (a unit test fails on a raw
 * status update anywhere else): each move is checked against the move table of
 * domain/jobStatus.ts and performs its side effects (a claim's end with its lease workflow, the
 * release's wake) in the same transaction.
 */
export { changeJobStatus, type JobScope, type JobStatusChange } from './change';
export { cancelOpenJobs } from './cancel';
export {
  claimJob,
  expireLapsedClaims,
  readClaim,
  type ExpiredClaim,
  type ClaimOutcome,
  type ClaimRequest,
  type LeaseGrant,
} from './claims';
export { moveDispatchedJob } from './dispatch';
export {
  POLL_COUNT_AHEAD,
  assertCallerMayAct,
  extendLease,
  jobAgentTypeOf,
  legacyQueueJobs,
  pollJobs,
  readPullAgent,
  type AgentCaller,
  type LeaseState,
  type PollItem,
  type PullAgent,
} from './pull';
