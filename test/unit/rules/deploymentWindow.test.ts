import * as deploymentWindow from '../../../domain/rules/deploymentWindow';
import type { PolicyRule } from '../../../domain/policies';
import { MAX_RULE_SECONDS } from '../../../domain/ruleLimits';
import { releaseFacts } from '../../helpers/releaseFacts';

const NOW = new Date('2026-11-19T12:00:00Z');
/** Daily from 13:00 to 14:00 UTC. */
const ONE_PM = 'FREQ=DAILY;BYHOUR=13;BYMINUTE=0;BYSECOND=0';

function verdict(spec: NonNullable<PolicyRule['deploymentWindow']>, now = NOW) {
  const evaluations = deploymentWindow.evaluate(releaseFacts(now, {}, [{ deploymentWindow: spec }]), now);
  expect(evaluations).toHaveLength(1);
  return evaluations[0]!;
}

const window = (allowWindow: boolean, rrule = ONE_PM) => ({
  rrule,
  durationMinutes: 60,
  timezone: 'UTC',
  allowWindow,
});

describe('deploymentWindow', () => {
  it('passes inside an allow window and waits outside it until it opens', () => {
    expect(verdict(window(true))).toEqual({
      kind: 'deploymentWindow',
      policyId: 'p1',
      ruleId: 'rule-0',
      state: 'waiting',
      reason: 'outside the allow window; it opens at 2026-11-19T13:00:00.000Z',
      nextEvaluationAt: '2026-11-19T13:00:00.000Z',
    });
    expect(verdict(window(true), new Date('2026-11-19T13:30:00Z'))).toMatchObject({
      state: 'passed',
      reason: 'inside an allow window until 2026-11-19T14:00:00.000Z',
    });
  });

  it('passes outside a deny window and waits inside it until it closes', () => {
    expect(verdict(window(false))).toMatchObject({ state: 'passed', reason: 'outside deny windows' });
    expect(verdict(window(false), new Date('2026-11-19T13:30:00Z'))).toMatchObject({
      state: 'waiting',
      nextEvaluationAt: '2026-11-19T14:00:00.000Z',
    });
  });

  it('is an allow window in UTC unless the rule says otherwise', () => {
    expect(verdict({ rrule: ONE_PM, durationMinutes: 60 }).nextEvaluationAt).toBe('2026-11-19T13:00:00.000Z');
  });

  it('blocks at a rule it cannot evaluate, allow and deny windows alike, and at an allow window that ended', () => {
    for (const allowWindow of [true, false]) {
      expect(verdict(window(allowWindow, 'FREQ=YEARLY;BYWEEKNO=20'))).toMatchObject({
        state: 'blocked',
        reason: "the window's rule cannot be evaluated: BYWEEKNO is not supported",
      });
    }
    expect(verdict(window(true, 'FREQ=DAILY;UNTIL=20250101T000000Z'))).toMatchObject({
      state: 'blocked',
      reason: 'the allow window never opens again',
    });
  });

  it('waits out a rule that never starts, reading it again at the end of its search', () => {
    expect(verdict(window(true, 'FREQ=DAILY;BYMONTH=2;BYMONTHDAY=31'))).toMatchObject({
      state: 'waiting',
      reason:
        'outside the allow window; none opens before 2036-11-19T12:00:00.000Z (the rule is read again then)',
      nextEvaluationAt: '2036-11-19T12:00:00.000Z',
    });
    expect(verdict(window(false, 'FREQ=DAILY;BYMONTH=2;BYMONTHDAY=31')).state).toBe('passed');
  });

  // Durations stored before rules had maxima are bounded where they are used
  // (docs/api.md "Records, selectors and release targets").
  it('bounds a deny window stored before rules had maxima, so the evaluation never fails', () => {
    const stored = { ...window(false, 'FREQ=DAILY;BYHOUR=11;BYMINUTE=0;BYSECOND=0'), durationMinutes: 1e13 };
    expect(verdict(stored)).toMatchObject({
      state: 'waiting',
      nextEvaluationAt: new Date(Date.parse('2026-11-19T11:00:00Z') + MAX_RULE_SECONDS * 1000).toISOString(),
    });
  });
});
