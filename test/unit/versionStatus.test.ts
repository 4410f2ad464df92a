import { becomesReady, canMoveVersion, VERSION_STATUSES } from '../../domain/versionStatus';

describe('version status moves', () => {
  it.each([
    ['building', 'ready', true],
    ['building', 'failed', true],
    ['ready', 'failed', true],
    ['ready', 'building', false],
    ['failed', 'ready', false],
    ['failed', 'building', false],
  ] as const)('%s → %s allowed: %s', (from, to, allowed) => {
    expect(canMoveVersion(from, to)).toBe(allowed);
  });

  it('always allows staying in place', () => {
    for (const status of VERSION_STATUSES) expect(canMoveVersion(status, status)).toBe(true);
  });

  it('treats only a move into ready as becoming ready', () => {
    expect(becomesReady(undefined, 'ready')).toBe(true);
    expect(becomesReady('building', 'ready')).toBe(true);
    expect(becomesReady('ready', 'ready')).toBe(false);
    expect(becomesReady(undefined, 'building')).toBe(false);
  });
});
