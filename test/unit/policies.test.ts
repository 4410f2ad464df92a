import { PolicyRuleInput, ruleKind } from '../../domain/policies';
import { JOB_AGENT_CONFIG_SCHEMAS } from '../../domain/jobAgents';
import { MAX_RULE_SECONDS, ruleTimerMs } from '../../domain/ruleLimits';

const parse = (rule: unknown) => PolicyRuleInput.safeParse(rule);
const messages = (rule: unknown) => {
  const result = parse(rule);
  return result.success ? [] : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};

describe('policy rules', () => {
  it('accepts each rule kind, keeping it as written (no default is filled in)', () => {
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
    // Parsed is what was sent: a declarative client reads back its own rule (RULE_DEFAULTS apply on use).
    for (const [rule] of cases) expect(parse(rule).data).toEqual(rule);
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

  it('refuses durations over a year and counts over their maximum', () => {
    const metric = {
      name: 'health',
      intervalSeconds: 60,
      count: 3,
      provider: { type: 'sleep', durationSeconds: 1 },
      successCondition: 'true',
    };
    const cases: [unknown, RegExp][] = [
      [{ versionCooldown: { intervalSeconds: 1e13 } }, /^versionCooldown\.intervalSeconds: Too big/],
      [{ versionCooldown: { intervalSeconds: 366 * 86_400 + 1 } }, /^versionCooldown\.intervalSeconds/],
      [{ retry: { maxRetries: 3, backoffSeconds: 1e13 } }, /^retry\.backoffSeconds/],
      [{ retry: { maxRetries: 3, maxBackoffSeconds: 1e13 } }, /^retry\.maxBackoffSeconds/],
      [
        { gradualRollout: { rolloutType: 'linear', timeScaleInterval: 1e13 } },
        /^gradualRollout\.timeScaleInterval/,
      ],
      [
        { environmentProgression: { dependsOnEnvironmentSelector: 'true', minimumSoakTimeMinutes: 1e13 } },
        /^environmentProgression\.minimumSoakTimeMinutes/,
      ],
      [
        { environmentProgression: { dependsOnEnvironmentSelector: 'true', maximumAgeHours: 1e13 } },
        /^environmentProgression\.maximumAgeHours/,
      ],
      [
        { verification: { metrics: [{ ...metric, intervalSeconds: 1e13 }] } },
        /^verification\.metrics\.0\.intervalSeconds/,
      ],
      [
        { verification: { metrics: [{ ...metric, failureThreshold: 1e9 }] } },
        /^verification\.metrics\.0\.failureThreshold/,
      ],
      [{ verification: { metrics: Array(51).fill(metric) } }, /^verification\.metrics/],
    ];
    for (const [rule, message] of cases) expect(messages(rule)[0]).toMatch(message);
    expect(messages({ versionCooldown: { intervalSeconds: 366 * 86_400 } })).toEqual([]);
  });
});

describe('job agent configuration', () => {
  it('bounds ids, templates and durations', () => {
    const issues = (type: keyof typeof JOB_AGENT_CONFIG_SCHEMAS, config: unknown) => {
      const result = JOB_AGENT_CONFIG_SCHEMAS[type].safeParse(config);
      return result.success ? [] : result.error.issues.map((i) => i.path.join('.'));
    };
    // zod's int() is a safe integer: an id survives the trip through a URL.
    expect(issues('github-app', { installation_id: 1e300, app_id: 678 })).toEqual(['installation_id']);
    expect(issues('argo-cd', { template: 'x'.repeat(65_537) })).toEqual(['template']);
    expect(issues('http-pull', { leaseSeconds: 1e13 })).toEqual(['leaseSeconds']);
    expect(issues('test-runner', { delaySeconds: 1e13 })).toEqual(['delaySeconds']);
    expect(issues('github-app', { installation_id: 12345, app_id: 678 })).toEqual([]);
  });
});

describe('rule timers', () => {
  it('bounds every stored duration before it becomes a workflow timer (docs/api.md "Records, selectors and release targets")', () => {
    expect(ruleTimerMs(30)).toBe(30_000);
    expect(ruleTimerMs(1e13)).toBe(MAX_RULE_SECONDS * 1000);
    expect(ruleTimerMs(-5)).toBe(0);
    expect(ruleTimerMs(null as unknown as number)).toBe(0);
  });
});
