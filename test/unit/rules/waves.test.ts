import type { RolloutMembership } from '../../../domain/rollouts';
import * as waves from '../../../domain/rules/waves';
import { releaseFacts } from '../../helpers/releaseFacts';

const NOW = new Date('2026-11-19T12:00:00Z');

const place = (over: Partial<RolloutMembership> = {}): RolloutMembership => ({
  rolloutId: 'o1',
  wave: 1,
  waveName: 'eu',
  waveCount: 3,
  admitted: false,
  state: 'running',
  reason: 'wave canary (1 of 3): 0 of 1 targets ended',
  ...over,
});

function verdict(membership: RolloutMembership | undefined) {
  const evaluations = waves.evaluate(
    releaseFacts(NOW, membership ? { waves: { 'rule-0': membership } } : {}, [
      {
        waves: {
          waves: [
            { name: 'canary', selector: 'true' },
            { name: 'eu', selector: 'true' },
          ],
        },
      },
    ]),
    NOW,
  );
  expect(evaluations).toHaveLength(1);
  return evaluations[0]!;
}

describe('waves', () => {
  it('waits until its rollout admits the target, saying where the rollout stands', () => {
    expect(verdict(place())).toEqual({
      kind: 'waves',
      policyId: 'p1',
      ruleId: 'rule-0',
      state: 'waiting',
      reason: 'wave eu (2 of 3) waits: wave canary (1 of 3): 0 of 1 targets ended',
    });
  });

  it('passes once admitted, whatever the rollout does next', () => {
    expect(verdict(place({ admitted: true, state: 'halted' }))).toMatchObject({
      state: 'passed',
      reason: 'admitted in wave eu (2 of 3)',
    });
  });

  it('blocks a target an aborted rollout had not admitted', () => {
    expect(verdict(place({ state: 'aborted' }))).toMatchObject({
      state: 'blocked',
      reason: 'wave eu (2 of 3): the rollout was aborted',
    });
  });

  it('passes a release that is no member of a rollout (a pin’s)', () => {
    expect(verdict(undefined).state).toBe('passed');
  });
});
