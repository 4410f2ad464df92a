import * as environmentProgression from '../../../domain/rules/environmentProgression';
import type { ReleaseFacts } from '../../../domain/gates';
import type { PolicyRule } from '../../../domain/policies';
import { releaseFacts } from '../../helpers/releaseFacts';

const NOW = new Date('2026-11-19T12:00:00Z');
const minutes = (n: number) => new Date(NOW.getTime() + n * 60_000).toISOString();

const RULE: NonNullable<PolicyRule['environmentProgression']> = {
  dependsOnEnvironmentSelector: 'environment.name == "staging"',
  minimumSuccessPercentage: 50,
  minimumSoakTimeMinutes: 30,
  successStatuses: ['successful'],
};

/** Staging, with 4 targets of the deployment, and this version's successes there. */
const staging = (successes: string[]): ReleaseFacts['progression'] => [
  { ruleId: 'rule-0', environments: [{ id: 'e0', name: 'staging', targets: 4, successes }] },
];

function verdict(progression: ReleaseFacts['progression'], rule = RULE) {
  const evaluations = environmentProgression.evaluate(
    releaseFacts(NOW, { progression }, [{ environmentProgression: rule }]),
    NOW,
  );
  expect(evaluations).toHaveLength(1);
  return evaluations[0]!;
}

describe('environmentProgression', () => {
  it('waits for enough successes in the environment depended on, saying how many', () => {
    expect(verdict(staging([minutes(-50)]))).toMatchObject({
      kind: 'environmentProgression',
      state: 'waiting',
      reason: 'staging: 1 of 4 targets succeeded, 2 needed',
      waitingOn: { environmentId: 'e0', successes: 2 },
    });
    // Unset, every target must succeed.
    const { minimumSuccessPercentage: _all, ...everyTarget } = RULE;
    expect(verdict(staging([minutes(-50), minutes(-40), minutes(-40)]), everyTarget).reason).toBe(
      'staging: 3 of 4 targets succeeded, 4 needed',
    );
  });

  it('waits out the soak time from the success that reached the threshold', () => {
    expect(verdict(staging([minutes(-50), minutes(-10)]))).toMatchObject({
      state: 'waiting',
      reason: `soaking until ${minutes(20)}`,
      nextEvaluationAt: minutes(20),
    });
  });

  it('passes once the environments succeeded and soaked, or when none matches', () => {
    expect(verdict(staging([minutes(-50), minutes(-40)]))).toMatchObject({
      state: 'passed',
      reason: 'dependency environments succeeded and soaked',
    });
    expect(verdict([{ ruleId: 'rule-0', environments: [] }])).toMatchObject({
      state: 'passed',
      reason: 'no environment matches the dependency',
    });
  });

  it('is blocked when the success it counts is older than the maximum age', () => {
    expect(verdict(staging([minutes(-180), minutes(-150)]), { ...RULE, maximumAgeHours: 2 })).toMatchObject({
      state: 'blocked',
      reason: 'staging: its success is older than 2 h',
    });
  });

  it('reads only its own rule’s environments', () => {
    const others: ReleaseFacts['progression'] = [
      { ruleId: 'rule-9', environments: [{ id: 'e0', name: 'staging', targets: 4, successes: [] }] },
    ];
    expect(verdict(others).state).toBe('passed');
  });
});
