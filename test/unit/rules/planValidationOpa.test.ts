import * as planValidationOpa from '../../../domain/rules/planValidationOpa';
import type { PlanVerdictFacts } from '../../../domain/rules/planValidationOpa';
import { releaseFacts } from '../../helpers/releaseFacts';

const NOW = new Date('2026-11-19T12:00:00Z');

function verdict(facts: PlanVerdictFacts) {
  const evaluations = planValidationOpa.evaluate(
    releaseFacts(NOW, facts, [{ planValidationOpa: { name: 'no-rc', rego: 'package main' } }]),
    NOW,
  );
  expect(evaluations).toHaveLength(1);
  return evaluations[0]!;
}

describe('planValidationOpa', () => {
  it('waits without a verdict on the plan, and retries a minute after the engine failed', () => {
    expect(verdict({})).toEqual({
      kind: 'planValidationOpa',
      policyId: 'p1',
      ruleId: 'rule-0',
      state: 'waiting',
      reason: 'plan validation no-rc is pending: no verdict on this plan yet',
    });
    expect(verdict({ planValidation: { 'rule-0': { error: 'opa timed out' } } })).toMatchObject({
      state: 'waiting',
      reason: 'plan validation no-rc could not run: opa timed out',
      nextEvaluationAt: '2026-11-19T12:01:00.000Z',
    });
  });

  it('passes on a verdict without denials, and reads only its own rule’s verdict', () => {
    expect(verdict({ planValidation: { 'rule-0': { denials: [] } } })).toMatchObject({
      state: 'passed',
      reason: 'plan validation no-rc passed',
    });
    expect(verdict({ planValidation: { 'rule-9': { denials: [] } } }).state).toBe('waiting');
  });

  it('is blocked by denials, quoting the first five', () => {
    expect(verdict({ planValidation: { 'rule-0': { denials: ['m0'] } } })).toMatchObject({
      state: 'blocked',
      reason: 'plan validation no-rc denies: m0',
    });
    const denials = Array.from({ length: 7 }, (_, n) => `m${n}`);
    expect(verdict({ planValidation: { 'rule-0': { denials } } }).reason).toBe(
      'plan validation no-rc denies: m0; m1; m2; m3; m4 (and 2 more)',
    );
  });
});
