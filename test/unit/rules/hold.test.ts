import type { HoldFact } from '../../../domain/holds';
import * as hold from '../../../domain/rules/hold';
import { blockHold, NOON_FREEZE, pinHold, releaseFacts } from '../../helpers/releaseFacts';

const NOW = new Date('2026-11-26T12:00:00Z');
const EVENING = new Date('2026-11-26T18:00:00Z');
const at = (seconds: number) => new Date(NOW.getTime() + seconds * 1000).toISOString();

const verdicts = (holds: HoldFact[] | undefined, now = NOW) =>
  hold.evaluate(releaseFacts(now, { holds }), now);

describe('hold (docs/behaviour.md "Holds and freezes")', () => {
  it('a block waits until it ends, saying who, why and until when', () => {
    expect(verdicts([blockHold({ expiresAt: at(60) })])).toEqual([
      {
        kind: 'hold',
        ruleId: 'h1',
        state: 'waiting',
        reason: `held by Ada until ${at(60)}: incident`,
        nextEvaluationAt: at(60),
      },
    ]);
    expect(verdicts([blockHold()])[0]).toEqual({
      kind: 'hold',
      ruleId: 'h1',
      state: 'waiting',
      reason: 'held by Ada until deleted: incident',
    });
  });

  it('a freeze waits inside its window and passes outside it until the next one', () => {
    expect(verdicts([blockHold({ schedule: NOON_FREEZE })])[0]).toMatchObject({
      state: 'waiting',
      nextEvaluationAt: '2026-11-26T13:00:00.000Z',
    });
    expect(verdicts([blockHold({ schedule: NOON_FREEZE })], EVENING)[0]).toMatchObject({
      state: 'passed',
      reason: 'outside the freeze of Ada until 2026-11-27T11:00:00.000Z: incident',
    });
  });

  it('passes once the hold ended', () => {
    expect(verdicts([blockHold({ expiresAt: at(-1) })])[0]).toMatchObject({
      state: 'passed',
      reason: 'the hold of Ada has ended',
    });
  });

  it('a pin passes its own version and holds every other one back; no hold ever blocks', () => {
    expect(verdicts([pinHold('v1')])[0]).toMatchObject({
      state: 'passed',
      reason: 'pinned here to v1 by Ada until deleted: stay',
    });
    expect(verdicts([pinHold('v0')])[0]).toMatchObject({
      state: 'waiting',
      reason: 'pinned to v0 by Ada until deleted: stay',
    });
  });

  it('answers one verdict per hold, and none without holds', () => {
    expect(verdicts([blockHold(), pinHold('v1')]).map((verdict) => verdict.ruleId)).toEqual(['h1', 'pin-v1']);
    expect(verdicts(undefined)).toEqual([]);
  });
});
