import { canEverDeploy, isNewerVersion, versionSelected, type TargetFields } from '../../domain/eligibility';
import type { PolicyRule } from '../../domain/policies';

const TARGET: TargetFields = {
  resource: { kind: 'service', version: 'v1', name: 'node', identifier: 'node', metadata: {}, config: {} },
  deployment: { id: 'd', name: 'api', slug: 'api', metadata: {} },
  environment: { id: 'e', name: 'prod', metadata: {} },
};

function version(id: string, createdAt: string, tag = '1.0.0') {
  return { id, tag, name: null, status: 'ready', metadata: {}, config: {}, createdAt };
}

const onlyStable = {
  id: 'r',
  versionSelector: { selector: '!version.tag.contains("-rc")', description: 'stable only' },
};

describe('isNewerVersion', () => {
  it('orders by creation time, then by id', () => {
    const early = { id: 'b', createdAt: '2026-11-24T10:00:00Z' };
    const late = { id: 'a', createdAt: '2026-11-24T10:00:01Z' };
    expect(isNewerVersion(late, early)).toBe(true);
    expect(isNewerVersion(early, late)).toBe(false);
    expect(isNewerVersion({ id: 'c', createdAt: early.createdAt }, early)).toBe(true);
    expect(isNewerVersion(early, early)).toBe(false);
  });
});

describe('versionSelected', () => {
  it('names the first version selector that refuses the version', () => {
    const rules = [onlyStable] as PolicyRule[];
    expect(versionSelected(rules, version('v', '2026-11-24T10:00:00Z', '2.0.0-rc1'), TARGET)).toEqual({
      ok: false,
      failing: 'stable only',
    });
    expect(versionSelected(rules, version('v', '2026-11-24T10:00:00Z', '2.0.0'), TARGET)).toEqual({
      ok: true,
    });
    expect(versionSelected([], version('v', '2026-11-24T10:00:00Z', '2.0.0-rc1'), TARGET)).toEqual({
      ok: true,
    });
  });
});

describe('canEverDeploy', () => {
  const deployed = { id: 'old', createdAt: '2026-11-24T10:00:00Z' };

  it('refuses a version older than the one deployed, and one a version selector refuses', () => {
    const older = version('older', '2026-11-24T09:00:00Z');
    const newer = version('newer', '2026-11-24T11:00:00Z');
    expect(canEverDeploy(older, { ...TARGET, deployed, rules: [] })).toBe(false);
    expect(canEverDeploy(newer, { ...TARGET, deployed, rules: [] })).toBe(true);
    expect(
      canEverDeploy(
        { ...newer, tag: '3.0.0-rc1' },
        { ...TARGET, deployed, rules: [onlyStable] as PolicyRule[] },
      ),
    ).toBe(false);
  });

  it('lets the deployed version itself and any version of an empty target through', () => {
    expect(canEverDeploy(version('old', deployed.createdAt), { ...TARGET, deployed, rules: [] })).toBe(true);
    expect(
      canEverDeploy(version('v', '2020-01-01T00:00:00Z'), { ...TARGET, deployed: null, rules: [] }),
    ).toBe(true);
  });
});
