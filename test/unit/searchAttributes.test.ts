import { searchAttributePairs, searchAttributeRegistrations } from '../../workflows/searchAttributes';

describe('search attributes', () => {
  it('registers every attribute with the dev server type names', () => {
    const registrations = searchAttributeRegistrations();
    expect(registrations).toContainEqual({ name: 'FlightdeckReleaseId', type: 'Keyword' });
    expect(registrations).toContainEqual({ name: 'FlightdeckJobIds', type: 'KeywordList' });
    expect(registrations).toHaveLength(7);
  });

  it('builds typed pairs only for the values given', () => {
    const pairs = searchAttributePairs({ workspaceId: 'w', jobIds: ['j1', 'j2'] });
    expect(pairs.map((pair) => [pair.key.name, pair.value])).toEqual([
      ['FlightdeckWorkspaceId', 'w'],
      ['FlightdeckJobIds', ['j1', 'j2']],
    ]);
  });
});
