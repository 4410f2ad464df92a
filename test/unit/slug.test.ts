import { slugify } from '../../domain/slug';

describe('slugify', () => {
  it.each([
    ['Payments API', 'payments-api'],
    ['  Über   Service!! ', 'uber-service'],
    ['a--b__c', 'a-b-c'],
    ['***', ''],
  ])('%j → %j', (input, expected) => expect(slugify(input)).toBe(expected));
});
