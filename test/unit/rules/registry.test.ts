import { evaluateRules, RULE_EVALUATORS } from '../../../domain/rules';
import type { PolicyRule } from '../../../domain/policies';
import { releaseFacts } from '../../helpers/releaseFacts';

const NOW = new Date('2026-11-19T12:00:00Z');

/** One rule of every kind a release waits at, listed against the registry's order. */
const RULES: Partial<PolicyRule>[] = [
  { deploymentWindow: { rrule: 'FREQ=DAILY;BYHOUR=13', durationMinutes: 60 } },
  { gradualRollout: { rolloutType: 'linear', timeScaleInterval: 60 } },
  { planValidationOpa: { name: 'plan', rego: 'package main' } },
  { versionCooldown: { intervalSeconds: 60 } },
  { anyApproval: { minApprovals: 1 } },
  { deploymentDependency: { dependsOn: 'true' } },
  { environmentProgression: { dependsOnEnvironmentSelector: 'true' } },
  { versionSelector: { selector: 'true' } },
  { waves: { waves: [{ name: 'canary', selector: 'true' }] } },
];

describe('the rule registry', () => {
  it('has one evaluator per kind', () => {
    const kinds = RULE_EVALUATORS.map((evaluator) => evaluator.kind);
    expect(new Set(kinds).size).toBe(kinds.length);
  });

  it('lists the verdicts in its order, whatever the order of the policy’s rules (a history records it)', () => {
    const facts = releaseFacts(
      NOW,
      {
        versionDependencies: [
          { deploymentId: 'd2', deploymentName: 'db', versionSelector: 'true', currentVersion: null },
        ],
        holds: [{ id: 'h1', effect: 'block', reason: 'incident', createdBy: { id: 'k1', name: 'Ada' } }],
      },
      RULES,
    );
    expect(evaluateRules(facts, NOW).map((evaluation) => evaluation.kind)).toEqual([
      'versionSelector',
      'anyApproval',
      'environmentProgression',
      'versionDependency',
      'deploymentDependency',
      'deploymentWindow',
      'versionCooldown',
      'gradualRollout',
      'waves',
      'planValidationOpa',
      'hold',
    ]);
  });

  it('answers only the version selectors’ verdict where no rule applies', () => {
    expect(evaluateRules(releaseFacts(NOW), NOW)).toEqual([
      { kind: 'versionSelector', state: 'passed', reason: 'the version is selected' },
    ]);
  });
});
