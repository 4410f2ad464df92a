import { evaluateGates } from '../../domain/gates';
import { holdExpiry, holdState, pinnedVersion } from '../../domain/holds';
import { blockHold, NOON_FREEZE, pinHold, releaseFacts } from '../helpers/releaseFacts';

const NOW = new Date('2026-11-26T12:00:00Z');
const at = (seconds: number) => new Date(NOW.getTime() + seconds * 1000).toISOString();

describe('holds (docs/behaviour.md "Holds and freezes")', () => {
  it('are in force until they expire; a freeze only inside its windows', () => {
    expect(holdState(blockHold(), NOW)).toEqual({ inForce: true });
    expect(holdState(blockHold({ expiresAt: at(60) }), NOW)).toEqual({
      inForce: true,
      changesAt: new Date(at(60)),
    });
    expect(holdState(blockHold({ expiresAt: at(0) }), NOW)).toEqual({ inForce: false });
    expect(holdState(blockHold({ schedule: NOON_FREEZE }), NOW)).toEqual({
      inForce: true,
      changesAt: new Date('2026-11-26T13:00:00Z'),
    });
    // Between windows: the next opening, unless the hold expires first.
    const evening = new Date('2026-11-26T18:00:00Z');
    expect(holdState(blockHold({ schedule: NOON_FREEZE }), evening)).toEqual({
      inForce: false,
      changesAt: new Date('2026-11-27T11:00:00Z'),
    });
    expect(
      holdState(blockHold({ schedule: NOON_FREEZE, expiresAt: '2026-11-27T00:00:00Z' }), evening),
    ).toEqual({
      inForce: false,
    });
    // Inside a window that outlasts the hold, it ends with the hold.
    expect(holdState(blockHold({ schedule: NOON_FREEZE, expiresAt: at(600) }), NOW).changesAt).toEqual(
      new Date(at(600)),
    );
    // A freeze in another time zone: 11:00–13:00 in Tokyo is 02:00–04:00 UTC.
    const tokyo = { ...NOON_FREEZE, timeZone: 'Asia/Tokyo' };
    expect(holdState(blockHold({ schedule: tokyo }), new Date('2026-11-26T03:00:00Z')).inForce).toBe(true);
    expect(holdState(blockHold({ schedule: tokyo }), NOW).inForce).toBe(false);
    // A schedule stored before the limits that cannot be evaluated keeps the freeze in force.
    expect(
      holdState(blockHold({ schedule: { ...NOON_FREEZE, rrule: 'FREQ=YEARLY;BYWEEKNO=20' } }), NOW),
    ).toEqual({
      inForce: true,
    });
  });

  it('a break-glass skip of the hold lets the release go', () => {
    const skips = [
      { id: 's1', ruleId: 'h1', reason: 'the fix', expiresAt: at(600), createdBy: { id: 'k2', name: 'Bo' } },
    ];
    const evaluation = evaluateGates(releaseFacts(NOW, { holds: [blockHold()], skips }), NOW);
    expect(evaluation.decision).toBe('proceed');
    expect(evaluation.rules.find((rule) => rule.kind === 'hold')?.reason).toBe(
      `skipped by Bo until ${at(600)}: the fix`,
    );
  });

  it('a pin passes its version past supersession and holds every other version back', () => {
    const newer = {
      id: 'r2',
      rejected: false,
      version: {
        id: 'v2',
        tag: '2.0.0',
        name: null,
        status: 'ready' as const,
        metadata: {},
        config: {},
        createdAt: at(-60),
      },
    };
    const runningNewer = { deployedVersionId: 'v2', deployedVersionCreatedAt: at(-60) };
    // Unpinned, the older version is superseded; pinned to it, it deploys over the newer one.
    expect(evaluateGates(releaseFacts(NOW, { newerReleases: [newer], ...runningNewer }), NOW).decision).toBe(
      'superseded',
    );
    const pinned = evaluateGates(
      releaseFacts(NOW, { newerReleases: [newer], ...runningNewer, holds: [pinHold('v1')] }),
      NOW,
    );
    expect(pinned.decision).toBe('proceed');
    expect(pinned.rules.find((rule) => rule.kind === 'hold')?.reason).toBe(
      'pinned here to v1 by Ada until deleted: stay',
    );
    // Another version waits at the pin; an expired pin holds nothing.
    const other = evaluateGates(releaseFacts(NOW, { holds: [pinHold('v0')] }), NOW);
    expect(other).toMatchObject({ decision: 'wait', reason: 'pinned to v0 by Ada until deleted: stay' });
    expect(pinnedVersion([pinHold('v0', { expiresAt: at(-1) })], NOW)).toBeUndefined();
    expect(pinnedVersion([pinHold('v0'), pinHold('v1')], NOW)?.id).toBe('v1');
  });

  it('an expiry must lie in the future', () => {
    expect(holdExpiry(undefined, NOW)).toBeNull();
    expect(holdExpiry(at(1), NOW)).toEqual(new Date(at(1)));
    expect(() => holdExpiry(at(0), NOW)).toThrow('expiresAt must be in the future');
  });
});
