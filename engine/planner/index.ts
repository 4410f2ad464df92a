/** The planner's front door: what each target would ship (read-only; the executor writes what it decides). */
export { type ProposedVersion } from './planInputs';
export { type ReleaseRow } from './releaseRows';
export { withShipDigest } from './shipDigests';
export { planTargets, type PlanTargetRow } from './targetPlans';
export { previewTargetVariables, type VariablePreview } from './targetVariables';
