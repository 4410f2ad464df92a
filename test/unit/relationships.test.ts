import { findRelated, RELATIONSHIP_SCAN_LIMIT } from '../../domain/relationships';
import { checkSelector } from '../../domain/selectors';
import { followReference, relationshipReferencesOf } from '../../domain/variables';

const resource = (id: string, kind: string, metadata: Record<string, string>) => ({
  id,
  kind,
  version: 'v1',
  name: id,
  identifier: id,
  metadata,
  config: {},
});

/**
 * Relationship rules relate a target's resource to another; references read through them
 * (docs/api.md "Records, selectors and release targets").
 */
describe('relationship rules', () => {
  const rule = 'to.kind == "database" && to.metadata["app"] == from.metadata["app"]';
  const app = resource('app-1', 'service', { app: 'shop' });
  const candidates = [
    resource('db-other', 'database', { app: 'blog' }),
    app,
    resource('db-shop', 'database', { app: 'shop', host: 'db.shop.internal' }),
    resource('db-shop-2', 'database', { app: 'shop' }),
  ];

  it('checks a rule over `from` and `to` only', () => {
    expect(checkSelector('relationship', rule)).toBeUndefined();
    expect(checkSelector('relationship', 'resource.kind == "x"')).toBeDefined();
    expect(checkSelector('relationship', 'to.knd == "x"')).toBeDefined();
  });

  it('relates the first matching resource, never the resource itself', () => {
    expect(findRelated(rule, app, candidates)?.id).toBe('db-shop');
    expect(findRelated('true', app, [app])).toBeUndefined();
    expect(findRelated(rule, resource('app-2', 'service', { app: 'none' }), candidates)).toBeUndefined();
  });

  it('checks at most RELATIONSHIP_SCAN_LIMIT candidates', () => {
    const many = Array.from({ length: RELATIONSHIP_SCAN_LIMIT }, (_, n) => resource(`r${n}`, 'service', {}));
    expect(findRelated(rule, app, [...many, candidates[2]!])).toBeUndefined();
  });

  it('follows a relationship reference into the related resource, and lists the references used', () => {
    const targets = {
      workspace: {},
      deployment: {},
      environment: {},
      resource: app,
      version: {},
      related: { database: candidates[2]! },
    };
    expect(followReference({ reference: 'database', path: ['metadata', 'host'] }, targets)).toBe(
      'db.shop.internal',
    );
    expect(followReference({ reference: 'cache', path: ['name'] }, targets)).toBeUndefined();
    expect(followReference({ reference: 'resource', path: ['name'] }, targets)).toBe('app-1');
    const definitions = [
      {
        key: 'DB_HOST',
        sensitive: false,
        values: [
          {
            id: 'a',
            priority: 0,
            reference: { reference: 'database', path: ['name'] },
            resourceSelector: null,
            sensitive: false,
          },
          {
            id: 'b',
            priority: 0,
            reference: { reference: 'resource', path: ['name'] },
            resourceSelector: null,
            sensitive: false,
          },
        ],
      },
    ];
    const sets = [
      {
        id: 's',
        name: 's',
        priority: 0,
        selector: 'true',
        variables: [{ key: 'C', reference: { reference: 'cache', path: ['name'] }, sensitive: false }],
      },
    ];
    expect([...relationshipReferencesOf(definitions, sets)].sort()).toEqual(['cache', 'database']);
  });
});
