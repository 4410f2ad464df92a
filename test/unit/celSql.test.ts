import { decodeFilterCursor, encodeFilterCursor, filterBinding } from '../../domain/filterCursor';
import { ValidationError } from '../../domain/errors';
import { CelQuery, type RecordScope } from '../../domain/selectors';
import { celPredicate } from '../../engine/selectors';

/** The SQL a list filter runs as, parsed as the list parses it; `undefined` when it is left to CEL. */
function sqlOf(scope: RecordScope, expression: string) {
  return celPredicate(scope, new CelQuery(scope, expression).ast);
}

const contains = (key: string, value: string) => JSON.stringify({ [key]: value });

describe('CEL list filters as SQL (engine/selectors/celSql.ts)', () => {
  it.each([
    ['resource.kind == "vm"', '"kind" = ?', ['vm']],
    ['"vm" == resource.kind', '"kind" = ?', ['vm']],
    ['resource.name != "api"', '"name" <> ?', ['api']],
    ['resource.identifier == "prod/api"', '"identifier" = ?', ['prod/api']],
    ['resource.version != "v1"', '"version" <> ?', ['v1']],
    ['resource.kind in ["vm", "pod"]', '"kind" IN (?, ?)', ['vm', 'pod']],
    ['resource.name.startsWith("prod-")', 'starts_with("name", ?)', ['prod-']],
    ['resource.name.endsWith("-eu")', 'right("name", char_length(?)) = ?', ['-eu', '-eu']],
    ['resource.identifier.contains("api")', 'strpos("identifier", ?) > 0', ['api']],
    ['!resource.name.contains("api")', 'NOT strpos("name", ?) > 0', ['api']],
  ])('translates a field comparison: %s', (expression, sql, params) => {
    expect(sqlOf('resource', expression)).toEqual({ sql, params });
  });

  it.each([
    ['resource.metadata["env"] == "prod"', '"metadata" @> ?::jsonb', [contains('env', 'prod')]],
    ['resource.metadata.env == "prod"', '"metadata" @> ?::jsonb', [contains('env', 'prod')]],
    ['"prod" == resource.metadata["env"]', '"metadata" @> ?::jsonb', [contains('env', 'prod')]],
    ['resource.metadata["env"] != "prod"', '"metadata" ->> ? <> ?', ['env', 'prod']],
    [
      'resource.metadata["env"] in ["prod", "qa"]',
      '("metadata" @> ?::jsonb OR "metadata" @> ?::jsonb)',
      [contains('env', 'prod'), contains('env', 'qa')],
    ],
    ['resource.metadata["team"].startsWith("pay")', 'starts_with("metadata" ->> ?, ?)', ['team', 'pay']],
    [
      'resource.metadata.team.endsWith("ay")',
      'right("metadata" ->> ?, char_length(?)) = ?',
      ['team', 'ay', 'ay'],
    ],
    ['resource.metadata.team.contains("ay")', 'strpos("metadata" ->> ?, ?) > 0', ['team', 'ay']],
  ])(
    'translates a metadata comparison as indexed containment where it can: %s',
    (expression, sql, params) => {
      expect(sqlOf('resource', expression)).toEqual({ sql, params });
    },
  );

  it('keeps values out of the SQL text, whatever they hold', () => {
    const hostile = `x' OR 1=1 --"\\`;
    const predicate = sqlOf('resource', `resource.kind == ${JSON.stringify(hostile)}`);
    expect(predicate).toEqual({ sql: '"kind" = ?', params: [hostile] });
    const key = sqlOf('resource', `resource.metadata[${JSON.stringify(hostile)}] != "v"`);
    expect(key).toEqual({ sql: '"metadata" ->> ? <> ?', params: [hostile, 'v'] });
  });

  it('combines with &&, || and parentheses in order, parameters in the order of their placeholders', () => {
    expect(
      sqlOf('resource', 'resource.kind == "vm" && (resource.metadata.env == "prod" || resource.name == "a")'),
    ).toEqual({
      sql: '("kind" = ? AND ("metadata" @> ?::jsonb OR "name" = ?))',
      params: ['vm', contains('env', 'prod'), 'a'],
    });
  });

  it('pushes ! down to the comparisons, where a negated metadata comparison needs the key', () => {
    expect(sqlOf('resource', '!(resource.kind == "vm" && resource.metadata.env == "prod")')).toEqual({
      sql: '("kind" <> ? OR "metadata" ->> ? <> ?)',
      params: ['vm', 'env', 'prod'],
    });
    // `!(a != b)` is `a == b`, a missing key still failing as it does in CEL.
    expect(sqlOf('resource', '!(resource.metadata.env != "prod")')).toEqual({
      sql: '"metadata" @> ?::jsonb',
      params: [contains('env', 'prod')],
    });
    expect(sqlOf('resource', '!!(resource.kind == "vm")')).toEqual({ sql: '"kind" = ?', params: ['vm'] });
    expect(sqlOf('resource', '!(resource.kind in ["vm"])')).toEqual({
      sql: '"kind" NOT IN (?)',
      params: ['vm'],
    });
    expect(sqlOf('resource', '!(resource.metadata.env in ["a", "b"])')).toEqual({
      sql: '"metadata" ->> ? NOT IN (?, ?)',
      params: ['env', 'a', 'b'],
    });
    expect(sqlOf('resource', '!resource.identifier.startsWith("prod/")')).toEqual({
      sql: 'NOT starts_with("identifier", ?)',
      params: ['prod/'],
    });
  });

  it("reads each record scope's own fields", () => {
    expect(sqlOf('deployment', 'deployment.slug == "api" || deployment.name == "API"')).toEqual({
      sql: '("slug" = ? OR "name" = ?)',
      params: ['api', 'API'],
    });
    expect(sqlOf('environment', 'environment.metadata.tier == "1"')).toEqual({
      sql: '"metadata" @> ?::jsonb',
      params: [contains('tier', '1')],
    });
    expect(sqlOf('version', 'version.status == "ready" && version.tag.startsWith("1.")')).toEqual({
      sql: '("status" = ? AND starts_with("tag", ?))',
      params: ['ready', '1.'],
    });
    // A version without a name shows CEL an empty one.
    expect(sqlOf('version', 'version.name == ""')).toEqual({ sql: `coalesce("name", '') = ?`, params: [''] });
  });

  it.each([
    ['resource.name.contains(resource.kind)'],
    ['resource.name.lowerAscii().contains("api")'],
    ['size(resource.name) > 3'],
    ['resource.name.size() == 3'],
    ['has(resource.metadata.env)'],
    ['"env" in resource.metadata'],
    ['resource.metadata.env == resource.kind'],
    ['resource.name.startsWith(resource.kind)'],
    ['resource.kind == "v" + "m"'],
    ['resource.kind in []'],
    ['resource.metadata.env in []'],
    ['resource.kind == "vm" ? true : false'],
    ['resource.config.tier == "large"'],
    ['resource.metadata.env == "prod" && resource.config.tier == "large"'],
    ['resource.kind == "vm" || size(resource.name) > 3'],
    ['resource.metadata.all(k, k.startsWith("a"))'],
    ['true'],
    ['resource.kind == "a\\u0000b"'],
    ['resource.metadata["a\\x00"] == "b"'],
  ])('leaves %s to CEL', (expression) => {
    expect(sqlOf('resource', expression)).toBeUndefined();
  });

  it('leaves fields it does not map, and scopes it does not know, to CEL', () => {
    expect(sqlOf('deployment', 'deployment.id == "x"')).toBeUndefined();
    expect(sqlOf('version', 'version.config.a == "b"')).toBeUndefined();
    expect(sqlOf('event', 'event.action == "release.created"')).toBeUndefined();
  });
});

describe('filtered list cursors (domain/filterCursor.ts)', () => {
  const binding = filterBinding(['workspace', 'resource', { deletedAt: null }, 'asc', 'resource', 'x']);
  const cursor = {
    after: { at: '1796211729659645', id: '0190a0b2-7c1d-7000-8000-000000000001' },
    matches: 10_000,
    skip: 0,
  };

  it('reads back what it wrote for the same list', () => {
    expect(decodeFilterCursor(encodeFilterCursor(cursor, binding), binding)).toEqual(cursor);
  });

  it('refuses a cursor answered for another filter or list with 400 on query.cursor', () => {
    const other = filterBinding(['workspace', 'resource', { deletedAt: null }, 'asc', 'resource', 'y']);
    expect(() => decodeFilterCursor(encodeFilterCursor(cursor, binding), other)).toThrow(
      expect.objectContaining({ issues: [expect.objectContaining({ path: 'query.cursor' })] }),
    );
  });

  it.each([
    ['not base64 JSON', 'garbage'],
    ['JSON but not a cursor', Buffer.from('[1,2]').toString('base64url')],
    [
      'a time that is not digits',
      Buffer.from(JSON.stringify({ a: "1' OR 1=1", i: cursor.after.id, m: 0, s: 0 })).toString('base64url'),
    ],
    [
      'an id that is not a uuid',
      Buffer.from(JSON.stringify({ a: '1', i: 'x', m: 0, s: 0 })).toString('base64url'),
    ],
    [
      'a negative count',
      Buffer.from(JSON.stringify({ a: '1', i: cursor.after.id, m: -1, s: 0 })).toString('base64url'),
    ],
  ])('refuses %s', (_, text) => {
    expect(() => decodeFilterCursor(text, binding)).toThrow(ValidationError);
  });
});
