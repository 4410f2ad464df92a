import type { ReleaseIdentityRow } from '../../domain/orchestration';
import type { ReleasePhase } from '../../domain/releases';

/** A release as planning and job creation read it. */
export interface ReleaseRow extends ReleaseIdentityRow {
  phase: ReleasePhase;
  created_at: Date | string;
}

/** The columns of a `ReleaseRow`, for the statements that read one. */
export const RELEASE_ROW_COLUMNS =
  'id, workspace_id, deployment_id, environment_id, resource_id, version_id, phase, created_at';
