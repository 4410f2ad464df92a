import {
  computeReleaseTargets,
  parseReleaseTargetKey,
  releaseTargetKey,
  type TargetDeployment,
  type TargetEnvironment,
  type TargetResource,
  type SystemLink,
} from '../../domain/releaseTargets';

const id = (n: number) => `00000000-0000-7000-8000-${String(n).padStart(12, '0')}`;
const resource = (n: number, kind: string, env: string): TargetResource => ({
  id: id(n),
  kind,
  version: 'v1',
  name: `r${n}`,
  identifier: `r${n}`,
  metadata: { env },
  config: {},
});
const resources = [
  resource(1, 'service', 'qa'),
  resource(2, 'database', 'qa'),
  resource(3, 'service', 'dev'),
  resource(4, 'database', 'dev'),
];
const environments: TargetEnvironment[] = [
  { id: id(10), name: 'qa', metadata: {}, resourceSelector: 'resource.metadata["env"] == "qa"' },
  { id: id(11), name: 'dev', metadata: {}, resourceSelector: 'resource.metadata["env"] == "dev"' },
];
const deployments: TargetDeployment[] = [
  { id: id(20), name: 'api', slug: 'api', metadata: {}, resourceSelector: 'resource.kind == "service"' },
  { id: id(21), name: 'db', slug: 'db', metadata: {}, resourceSelector: 'resource.kind == "database"' },
];
const system = id(30);
const links: SystemLink[] = [
  ...deployments.map((d) => ({ systemId: system, deploymentId: d.id })),
  ...environments.map((e) => ({ systemId: system, environmentId: e.id })),
];
const keys = (targets: ReturnType<typeof computeReleaseTargets>) => targets.map(releaseTargetKey).sort();

describe('computeReleaseTargets', () => {
  it('gives the 4-resource matrix exactly 4 targets', () => {
    expect(keys(computeReleaseTargets({ resources, environments, deployments, links }))).toEqual(
      [
        { resourceId: id(1), environmentId: id(10), deploymentId: id(20) },
        { resourceId: id(2), environmentId: id(10), deploymentId: id(21) },
        { resourceId: id(3), environmentId: id(11), deploymentId: id(20) },
        { resourceId: id(4), environmentId: id(11), deploymentId: id(21) },
      ]
        .map(releaseTargetKey)
        .sort(),
    );
  });

  it('requires the deployment and the environment to share a system', () => {
    const otherSystem = links.map((l) => (l.environmentId === id(11) ? { ...l, systemId: id(31) } : l));
    const targets = computeReleaseTargets({ resources, environments, deployments, links: otherSystem });
    expect(targets.every((t) => t.environmentId === id(10))).toBe(true);
    expect(targets).toHaveLength(2);
  });

  it('includes nothing for an environment without a selector, anything of its environments for a deployment without one', () => {
    const noEnvSelector = environments.map((e) => (e.id === id(10) ? { ...e, resourceSelector: null } : e));
    expect(
      computeReleaseTargets({ resources, environments: noEnvSelector, deployments, links }),
    ).toHaveLength(2);
    const openDeployment = deployments.map((d) => (d.id === id(20) ? { ...d, resourceSelector: null } : d));
    expect(
      computeReleaseTargets({ resources, environments, deployments: openDeployment, links }),
    ).toHaveLength(6);
  });

  it('limits the computation to the deployments or environments asked for', () => {
    const onlyApi = computeReleaseTargets({
      resources,
      environments,
      deployments,
      links,
      onlyDeployments: new Set([id(20)]),
    });
    expect(onlyApi.map((t) => t.resourceId).sort()).toEqual([id(1), id(3)]);
  });

  it('round-trips keys', () => {
    const target = { resourceId: id(1), environmentId: id(10), deploymentId: id(20) };
    expect(parseReleaseTargetKey(releaseTargetKey(target))).toEqual(target);
    expect(parseReleaseTargetKey('not-a-key')).toBeUndefined();
  });
});
