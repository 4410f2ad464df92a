import * as versionCooldown from '../../../domain/rules/versionCooldown';
import type { DeployedVersionFacts } from '../../../domain/rules/versionCooldown';
import { releaseFacts } from '../../helpers/releaseFacts';

const NOW = new Date('2026-11-19T12:00:00Z');
const minutes = (n: number) => new Date(NOW.getTime() + n * 60_000).toISOString();

function verdict(deployed: DeployedVersionFacts, intervalSeconds = 3600) {
  const evaluations = versionCooldown.evaluate(
    releaseFacts(NOW, deployed, [{ versionCooldown: { intervalSeconds } }]),
    NOW,
  );
  expect(evaluations).toHaveLength(1);
  return evaluations[0]!;
}

describe('versionCooldown', () => {
  it('waits until the interval after the deployed version was created has passed', () => {
    expect(verdict({ deployedVersionId: 'v0', deployedVersionCreatedAt: minutes(-20) })).toEqual({
      kind: 'versionCooldown',
      policyId: 'p1',
      ruleId: 'rule-0',
      state: 'waiting',
      reason: `cooling down until ${minutes(40)}`,
      nextEvaluationAt: minutes(40),
    });
  });

  it('passes once it elapsed, with nothing deployed, and for the deployed version itself; it never blocks', () => {
    expect(verdict({ deployedVersionId: 'v0', deployedVersionCreatedAt: minutes(-90) })).toMatchObject({
      state: 'passed',
      reason: 'cooldown elapsed',
    });
    const nothing = { state: 'passed', reason: 'nothing deployed to cool down from' };
    expect(verdict({ deployedVersionId: null, deployedVersionCreatedAt: null })).toMatchObject(nothing);
    expect(verdict({ deployedVersionId: 'v1', deployedVersionCreatedAt: minutes(-1) })).toMatchObject(
      nothing,
    );
  });

  it('waits, instead of failing, on a cooldown saved before durations had a maximum', () => {
    expect(verdict({ deployedVersionId: 'v0', deployedVersionCreatedAt: minutes(-20) }, 1e13)).toMatchObject({
      state: 'waiting',
      nextEvaluationAt: '+275760-09-13T00:00:00.000Z',
    });
  });
});
