import { summarizeCells, type TargetGroup } from '../../domain/boardCells';

const group = (
  cell: string,
  currentTag: string | null,
  desiredTag: string | null,
  state: string,
  targets: number,
): TargetGroup => ({
  deploymentId: `d-${cell}`,
  environmentId: `e-${cell}`,
  currentTag,
  desiredTag,
  state,
  targets,
});

describe('summarizeCells (docs/api.md "The rollout board")', () => {
  it('sums each cell’s groups into its targets, versions and states', () => {
    const cells = summarizeCells([
      group('a', 'v1', 'v2', 'running', 3),
      group('b', null, null, 'none', 4),
      group('a', 'v2', 'v2', 'succeeded', 5),
      group('a', 'v1', 'v1', 'succeeded', 2),
      group('a', null, 'v2', 'pending', 1),
    ]);
    expect(cells).toEqual([
      {
        deploymentId: 'd-a',
        environmentId: 'e-a',
        targets: 11,
        current: [
          { tag: 'v1', targets: 5 },
          { tag: 'v2', targets: 5 },
        ],
        desired: [
          { tag: 'v2', targets: 9 },
          { tag: 'v1', targets: 2 },
        ],
        states: { running: 3, succeeded: 7, pending: 1 },
      },
      {
        deploymentId: 'd-b',
        environmentId: 'e-b',
        targets: 4,
        current: [],
        desired: [],
        states: { none: 4 },
      },
    ]);
  });

  it('orders a cell’s versions by targets, most first, then by tag', () => {
    const [cell] = summarizeCells([
      group('a', 'v10', null, 'none', 1),
      group('a', 'v2', null, 'none', 7),
      group('a', 'v1', null, 'none', 1),
    ]);
    expect(cell!.current.map((version) => version.tag)).toEqual(['v2', 'v1', 'v10']);
  });

  it('has no cells without groups', () => {
    expect(summarizeCells([])).toEqual([]);
  });
});
