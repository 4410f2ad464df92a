import * as deploymentDependency from '../../../domain/rules/deploymentDependency';
import type { UpstreamFacts } from '../../../domain/rules/deploymentDependency';
import { readyVersion, releaseFacts } from '../../helpers/releaseFacts';

const NOW = new Date('2026-11-19T12:00:00Z');
const RULE = {
  deploymentDependency: { dependsOn: 'deployment.slug == "db" && version.tag.startsWith("v2.")' },
};

const upstream = (slug: string, tag: string): NonNullable<UpstreamFacts['upstream']> => [
  {
    deployment: { id: `d-${slug}`, name: slug, slug, metadata: {} },
    version: readyVersion(tag, NOW.toISOString()),
  },
];

const verdict = (facts: UpstreamFacts) => {
  const evaluations = deploymentDependency.evaluate(releaseFacts(NOW, facts, [RULE]));
  expect(evaluations).toHaveLength(1);
  return evaluations[0]!;
};

describe('deploymentDependency', () => {
  it("passes when another deployment's current version on the resource matches", () => {
    expect(verdict({ upstream: upstream('db', 'v2.1.0') })).toEqual({
      kind: 'deploymentDependency',
      policyId: 'p1',
      ruleId: 'rule-0',
      state: 'passed',
      reason: 'db runs v2.1.0 here',
    });
  });

  it('waits, never blocks, while nothing here matches', () => {
    const waiting = {
      state: 'waiting',
      reason:
        'no deployment runs a version here that matches deployment.slug == "db" && version.tag.startsWith("v2.")',
    };
    expect(verdict({ upstream: upstream('db', 'v1.0.0') })).toMatchObject(waiting);
    expect(verdict({ upstream: upstream('cache', 'v2.1.0') })).toMatchObject(waiting);
    expect(verdict({ upstream: [] })).toMatchObject(waiting);
    expect(verdict({})).toMatchObject(waiting);
  });
});
