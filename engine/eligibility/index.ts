/** Eligibility's front door: the facts a release's gates judge, read set-based, and who may approve. */
export { authorRefusal, versionAuthorRole } from './approvers';
export { loadWorkspaceHolds } from './holdMatching';
export { loadDryRunFacts, loadRelease, loadTargetVersionFacts } from './releaseFacts';
