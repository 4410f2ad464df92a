/**
 * What the board's script (api/ui/browser/board.ts) reads from the board's JSON: the fields it
 * draws, no more. api/routes/ui.ts answers with bodies that satisfy these types, so a field the
 * server renames or drops fails the type check of both. Types only: the script is compiled alone
 * (api/ui/boardScript.ts), and this file compiles for the browser and for Node alike.
 */

/** Where the board's links lead: paths with `{jobId}`, `{jobAgentId}`, `{slug}`, `{releaseId}` to fill in. */
export interface BoardLinksJson {
  job: string;
  agent: string;
  deployment: string;
  /** The release's workflow in the Temporal UI, when the API knows where that is. */
  releaseWorkflow: string | null;
}

/** A group of targets as a cell draws it: the versions they run and head to, their states, why they wait. */
export interface TargetCountsJson {
  targets: number;
  current: { tag: string; targets: number }[];
  desired: { tag: string; targets: number }[];
  states: Record<string, number>;
  waiting: { reason: string; releases: number }[];
}

/** One deployment × environment cell of the matrix. */
export interface BoardCellJson extends TargetCountsJson {
  deploymentId: string;
  environmentId: string;
  activeJobs: {
    id: string;
    status: string;
    releaseId: string;
    agent: { id: string; name: string } | null;
    resource: string;
  }[];
}

/** The levers in force: holds and skips, each with who, why and until when. */
export interface LeversJson {
  holds: {
    id: string;
    effect: string;
    versionId?: string;
    schedule?: unknown;
    selector: string;
    expiresAt?: string;
    reason: string;
    createdBy: { name: string };
  }[];
  skips: {
    id: string;
    ruleId: string;
    versionId: string;
    expiresAt: string;
    reason: string;
    createdBy: { name: string };
  }[];
}

/** `GET /ui/board.json`: the matrix, narrowed by the filters, and what the filters can name. */
export interface BoardJson {
  workspaceId: string;
  deployments: {
    id: string;
    name: string;
    slug: string;
    targets: number;
    latestVersion: { tag: string; onTargets: number } | null;
  }[];
  environments: { id: string; name: string }[];
  cells: BoardCellJson[];
  choices: {
    systems: { slug: string; name: string }[];
    deployments: { slug: string; name: string }[];
    environments: { name: string }[];
  };
  levers: LeversJson;
  links: BoardLinksJson;
}

/** A release on a deployment's page; a pending one lists the rules that hold it. */
export interface RecentReleaseJson {
  id: string;
  tag: string;
  versionId: string;
  environmentId: string;
  holdingRules: { ruleId: string; kind: string; reason: string }[];
  environment: string;
  resource: string;
  phase: string;
  phaseReason: string | null;
  createdAt: string;
}

/** The delivery figures of a deployment's page and the releases that ended per day. */
export interface DoraJson {
  window: { from: string };
  overall: {
    deployments: number;
    deploymentsPerDay: number;
    leadTimeSeconds: { p50: number | null };
    changeFailureRate: number | null;
    timeToRestoreSeconds: { p50: number | null };
    unrestored: number;
  };
  daily: { day: string; succeeded: number; failed: number }[];
}

/** An audit event of a deployment's timeline. */
export interface TimelineEventJson {
  at: string;
  actor: { type: string; name: string };
  action: string;
  record: { type: string; id: string };
  changes: string[];
  details: Record<string, unknown>;
}

/** `GET /ui/deployments/{slug}/board.json`: a deployment's page. */
export interface DeploymentPageJson {
  workspaceId: string;
  deployment: { name: string; slug: string; description: string | null; systems: string[] };
  targets: number;
  versions: {
    tag: string;
    status: string;
    createdAt: string;
    onTargets: number;
    releases: Record<string, number>;
  }[];
  environments: (TargetCountsJson & { name: string })[];
  recentReleases: RecentReleaseJson[];
  dora: DoraJson;
  timeline: TimelineEventJson[];
  levers: LeversJson;
  links: BoardLinksJson;
}
