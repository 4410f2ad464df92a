import { PolicyRuleInput, ruleKind } from '../../domain/policies';

const parse = (rule: unknown) => PolicyRuleInput.safeParse(rule);
const messages = (rule: unknown) => {
  const result = parse(rule);
  return result.success ? [] : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};

describe('policy rules', () => {
  it('accepts each rule kind with its defaults', () => {
    const cases: [unknown, string][] = [
      [{ anyApproval: { minApprovals: 2 } }, 'anyApproval'],
      [
        { environmentProgression: { dependsOnEnvironmentSelector: 'environment.name == "staging"' } },
        'environmentProgression',
      ],
      [
        { deploymentWindow: { rrule: 'FREQ=WEEKLY;BYDAY=MO,TU;BYHOUR=9', durationMinutes: 60 } },
        'deploymentWindow',
      ],
      [{ versionSelector: { selector: 'version.tag.startsWith("2.")' } }, 'versionSelector'],
      [{ versionCooldown: { intervalSeconds: 300 } }, 'versionCooldown'],
      [{ retry: { maxRetries: 2, backoffSeconds: 10 } }, 'retry'],
      [{ gradualRollout: { rolloutType: 'linear', timeScaleInterval: 60 } }, 'gradualRollout'],
      [
        {
          verification: {
            metrics: [
              {
                name: 'health',
                intervalSeconds: 10,
                count: 3,
                provider: { type: 'http', url: 'http://svc/health' },
                successCondition: 'result.statusCode == 200',
              },
            ],
          },
        },
        'verification',
      ],
    ];
    for (const [rule, kind] of cases) {
      const result = parse(rule);
      expect(result.error?.issues).toBeUndefined();
      expect(ruleKind(result.data!)).toBe(kind);
    }
    const progression = parse(cases[1]![0]).data!.environmentProgression!;
    expect(progression).toMatchObject({
      minimumSuccessPercentage: 100,
      minimumSoakTimeMinutes: 0,
      successStatuses: ['successful'],
    });
    expect(parse(cases[2]![0]).data!.deploymentWindow).toMatchObject({ timezone: 'UTC', allowWindow: true });
  });

  it('requires exactly one kind per rule', () => {
    expect(messages({})[0]).toMatch(/needs one of/);
    expect(messages({ anyApproval: { minApprovals: 1 }, retry: { maxRetries: 1 } })[0]).toMatch(
      /exactly one kind/,
    );
  });

  it('names the invalid field, with CEL positions, rrule and time zone problems', () => {
    expect(messages({ anyApproval: { minApprovals: 0 } })[0]).toMatch(/^anyApproval\.minApprovals/);
    expect(messages({ versionSelector: { selector: 'version.tag ==' } })[0]).toMatch(
      /^versionSelector\.selector: invalid CEL: line 1, column 15/,
    );
    expect(messages({ deploymentWindow: { rrule: 'FREQ=NEVER', durationMinutes: 5 } })[0]).toMatch(
      /deploymentWindow\.rrule/,
    );
    expect(
      messages({ deploymentWindow: { rrule: 'FREQ=DAILY', durationMinutes: 5, timezone: 'Mars/Base' } })[0],
    ).toMatch(/deploymentWindow\.timezone: unknown IANA time zone/);
    expect(messages({ retry: { maxRetries: 1, retryOnStatuses: ['exploded'] } })[0]).toMatch(
      /retry\.retryOnStatuses\.0/,
    );
  });
});
