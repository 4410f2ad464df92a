/** Explain's front door: why a target is or is not on a version, read above the planner and eligibility. */
export { explainReleaseTarget } from './targetExplain';
