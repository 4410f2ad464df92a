import { JobAgentBody } from '../../api/schemas/jobAgent';
import { EnvironmentProgressionRule, VerificationMetric } from '../../domain/policies';

/** Ctrlplane's spellings accepted beside ours, stored as ours; unset stays unset. */
describe("Ctrlplane's spellings", () => {
  const metric = (provider: object) => ({
    name: 'health',
    intervalSeconds: 10,
    count: 3,
    provider,
    successCondition: 'result.statusCode == 200',
  });

  it('reads an http probe `timeout` duration as timeoutSeconds, rounded up', () => {
    const parse = (timeout: string) =>
      VerificationMetric.parse(metric({ type: 'http', url: 'https://x.example/health', timeout })).provider;
    expect(parse('45s')).toMatchObject({ timeoutSeconds: 45 });
    expect(parse('2m')).toMatchObject({ timeoutSeconds: 120 });
    expect(parse('1500ms')).toMatchObject({ timeoutSeconds: 2 });
    expect(parse('45s')).not.toHaveProperty('timeout');
    for (const timeout of ['1h', 'soon', '10']) {
      expect(
        VerificationMetric.safeParse(metric({ type: 'http', url: 'https://x.example', timeout })).success,
      ).toBe(false);
    }
    const both = metric({ type: 'http', url: 'https://x.example', timeout: '5s', timeoutSeconds: 5 });
    expect(VerificationMetric.safeParse(both).success).toBe(false);
  });

  it('leaves minimumSuccessPercentage unset when it is not given', () => {
    const rule = EnvironmentProgressionRule.parse({
      dependsOnEnvironmentSelector: 'environment.name == "qa"',
    });
    expect(rule).not.toHaveProperty('minimumSuccessPercentage');
  });

  it("stores an Argo CD agent's serverUrl and apiKey as server_url and api_key, and refuses both spellings at once", () => {
    const body = JobAgentBody.parse({
      name: 'argo',
      type: 'argo-cd',
      config: { serverUrl: 'https://argo.example', apiKey: 'k', template: 'x' },
    });
    expect(body.config).toEqual({ server_url: 'https://argo.example', api_key: 'k', template: 'x' });
    const twice = { serverUrl: 'https://a.example', server_url: 'https://b.example' };
    expect(JobAgentBody.safeParse({ name: 'argo', type: 'argo-cd', config: twice }).success).toBe(false);
    const github = JobAgentBody.parse({
      name: 'gh',
      type: 'github-app',
      config: { installationId: 12, appId: 3 },
    });
    expect(github.config).toMatchObject({ installation_id: 12, app_id: 3 });
  });
});
