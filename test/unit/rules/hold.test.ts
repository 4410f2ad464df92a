import type { HoldFact } from '../../../domain/holds';
import * as hold from '../../../domain/rules/hold';
import { releaseFacts } from '../../helpers/releaseFacts';

const NOW = new Date('2026-11-26T12:00:00Z');
const EVENING = new Date('2026-11-26T18:00:00Z');
const at = (seconds: number) => new Date(NOW.getTime() + seconds * 1000).toISOString();
const block = (extra: Partial<HoldFact> = {}): HoldFact => ({
  id: 'h1',
  effect: 'block',
  reason: 'incident',
  createdBy: { id: 'k1', name: 'Ada' },
  ...extra,
});
const pin = (versionId: string): HoldFact =>
  block({
    id: `pin-${versionId}`,
    effect: 'pin',
    reason: 'stay',
    version: { id: versionId, tag: versionId },
  });
/** A daily freeze from 11:00 to 13:00 UTC. */
const noonFreeze = {
  rrule: 'DTSTART:20261101T110000\nRRULE:FREQ=DAILY',
  durationSeconds: 7200,
  timeZone: 'UTC',
};

const verdicts = (holds: HoldFact[] | undefined, now = NOW) =>
  hold.evaluate(releaseFacts(now, { holds }), now);

describe('hold (docs/behaviour.md "Holds and freezes")', () => {
  it('a block waits until it ends, saying who, why and until when', () => {
    expect(verdicts([block({ expiresAt: at(60) })])).toEqual([
      {
        kind: 'hold',
        ruleId: 'h1',
        state: 'waiting',
        reason: `held by Ada until ${at(60)}: incident`,
        nextEvaluationAt: at(60),
      },
    ]);
    expect(verdicts([block()])[0]).toEqual({
      kind: 'hold',
      ruleId: 'h1',
      state: 'waiting',
      reason: 'held by Ada until deleted: incident',
    });
  });

  it('a freeze waits inside its window and passes outside it until the next one', () => {
    expect(verdicts([block({ schedule: noonFreeze })])[0]).toMatchObject({
      state: 'waiting',
      nextEvaluationAt: '2026-11-26T13:00:00.000Z',
    });
    expect(verdicts([block({ schedule: noonFreeze })], EVENING)[0]).toMatchObject({
      state: 'passed',
      reason: 'outside the freeze of Ada until 2026-11-27T11:00:00.000Z: incident',
    });
  });

  it('passes once the hold ended', () => {
    expect(verdicts([block({ expiresAt: at(-1) })])[0]).toMatchObject({
      state: 'passed',
      reason: 'the hold of Ada has ended',
    });
  });

  it('a pin passes its own version and holds every other one back; no hold ever blocks', () => {
    expect(verdicts([pin('v1')])[0]).toMatchObject({
      state: 'passed',
      reason: 'pinned here to v1 by Ada until deleted: stay',
    });
    expect(verdicts([pin('v0')])[0]).toMatchObject({
      state: 'waiting',
      reason: 'pinned to v0 by Ada until deleted: stay',
    });
  });

  it('answers one verdict per hold, and none without holds', () => {
    expect(verdicts([block(), pin('v1')]).map((verdict) => verdict.ruleId)).toEqual(['h1', 'pin-v1']);
    expect(verdicts(undefined)).toEqual([]);
  });
});
