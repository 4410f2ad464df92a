import { JSON_INPUT_LIMITS, jsonInputIssues } from '../../domain/jsonInput';

function nested(depth: number): unknown {
  let value: unknown = 'leaf';
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? { a: value } : [value];
  return value;
}

describe('jsonInputIssues', () => {
  it('accepts ordinary bodies, emoji and paired surrogates included', () => {
    expect(
      jsonInputIssues({ name: 'api 🚀', tags: ['a', 'b'], config: { n: 1, ok: true, x: null } }),
    ).toEqual([]);
    expect(jsonInputIssues(undefined)).toEqual([]);
    expect(jsonInputIssues(nested(JSON_INPUT_LIMITS.maxDepth))).toEqual([]);
  });

  it('refuses NUL in values and keys, with the path', () => {
    expect(jsonInputIssues({ metadata: { team: 'a\u0000b' } })).toEqual([
      { path: 'body.metadata.team', message: 'contains a NUL character' },
    ]);
    expect(jsonInputIssues({ metadata: { 'a\u0000': 'x' } })).toEqual([
      { path: 'body.metadata', message: 'has a key that contains a NUL character' },
    ]);
  });

  it.each([['\uD800'], ['x\uDC00'], ['\uDBFFz'], ['\uDC00\uD800']])(
    'refuses the lone surrogate in %j',
    (text) => {
      expect(jsonInputIssues({ list: [text] })).toEqual([
        { path: 'body.list[0]', message: 'contains an unpaired UTF-16 surrogate' },
      ]);
    },
  );

  it('refuses nesting beyond the limit and bodies with too many values', () => {
    const deep = jsonInputIssues({ config: nested(JSON_INPUT_LIMITS.maxDepth + 5) });
    expect(deep).toHaveLength(1);
    expect(deep[0]!.message).toMatch(/nests deeper than 32 levels/);
    const wide = jsonInputIssues(Array.from({ length: JSON_INPUT_LIMITS.maxNodes + 1 }, () => 0));
    expect(wide).toEqual([{ path: 'body', message: 'holds more than 100000 values' }]);
  });
});
