import * as gradualRollout from '../../../domain/rules/gradualRollout';
import type { RolloutFacts } from '../../../domain/rules/gradualRollout';
import { releaseFacts } from '../../helpers/releaseFacts';

const NOW = new Date('2026-11-19T12:00:00Z');
const minutes = (n: number) => new Date(NOW.getTime() + n * 60_000).toISOString();

function verdict(rolloutType: 'linear' | 'linear-normalized', rollout: RolloutFacts['rollout']) {
  const evaluations = gradualRollout.evaluate(
    releaseFacts(NOW, { rollout }, [{ gradualRollout: { rolloutType, timeScaleInterval: 600 } }]),
    NOW,
  );
  expect(evaluations).toHaveLength(1);
  return evaluations[0]!;
}

describe('gradualRollout', () => {
  it('waits for its turn: linear spacing is the interval per position', () => {
    expect(verdict('linear', { position: 3, total: 10, startedAt: minutes(-10) })).toEqual({
      kind: 'gradualRollout',
      policyId: 'p1',
      ruleId: 'rule-0',
      state: 'waiting',
      reason: `target 4 of 10 is scheduled for ${minutes(20)}`,
      nextEvaluationAt: minutes(20),
    });
  });

  it('passes when its turn came: normalized spacing spreads the interval over every target', () => {
    expect(verdict('linear-normalized', { position: 9, total: 10, startedAt: minutes(-10) })).toMatchObject({
      state: 'passed',
      reason: 'target 10 of 10 is due',
    });
    expect(verdict('linear', { position: 0, total: 1, startedAt: minutes(0) }).state).toBe('passed');
  });

  it('never blocks, however far its turn lies', () => {
    expect(verdict('linear', { position: 9999, total: 10_000, startedAt: minutes(0) }).state).toBe('waiting');
  });
});
