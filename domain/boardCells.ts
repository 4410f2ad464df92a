/** One group of a board cell's targets: those with the same current version, desired version and state. */
export interface TargetGroup {
  deploymentId: string;
  environmentId: string;
  /** The tag of the version the targets run (their current release's), null when none runs. */
  currentTag: string | null;
  /** The tag of the version their newest release deploys, null without a release. */
  desiredTag: string | null;
  /** The phase of their newest release, `none` without one. */
  state: string;
  targets: number;
}

export interface CellCounts {
  deploymentId: string;
  environmentId: string;
  targets: number;
  /** Each version with how many of the cell's targets it is, most targets first (then by tag). */
  current: { tag: string; targets: number }[];
  desired: { tag: string; targets: number }[];
  states: Record<string, number>;
}

/**
 * The rollout board's cells from groups of targets (the database groups the targets, the cells are
 * summed here): each cell's target count, its versions by how many targets run or head to them, and
 * its targets by state. Cells come in the order their first group does.
 */
export function summarizeCells(groups: readonly TargetGroup[]): CellCounts[] {
  const cells = new Map<
    string,
    { counts: CellCounts; current: Map<string, number>; desired: Map<string, number> }
  >();
  for (const group of groups) {
    const key = `${group.deploymentId}/${group.environmentId}`;
    let cell = cells.get(key);
    if (!cell) {
      const counts = {
        deploymentId: group.deploymentId,
        environmentId: group.environmentId,
        targets: 0,
        current: [],
        desired: [],
        states: {},
      };
      cell = { counts, current: new Map(), desired: new Map() };
      cells.set(key, cell);
    }
    cell.counts.targets += group.targets;
    cell.counts.states[group.state] = (cell.counts.states[group.state] ?? 0) + group.targets;
    if (group.currentTag !== null) add(cell.current, group.currentTag, group.targets);
    if (group.desiredTag !== null) add(cell.desired, group.desiredTag, group.targets);
  }
  return [...cells.values()].map(({ counts, current, desired }) => ({
    ...counts,
    current: byTargets(current),
    desired: byTargets(desired),
  }));
}

function add(counts: Map<string, number>, tag: string, targets: number): void {
  counts.set(tag, (counts.get(tag) ?? 0) + targets);
}

function byTargets(counts: Map<string, number>): { tag: string; targets: number }[] {
  return [...counts]
    .map(([tag, targets]) => ({ tag, targets }))
    .sort((a, b) => b.targets - a.targets || (a.tag < b.tag ? -1 : a.tag > b.tag ? 1 : 0));
}
