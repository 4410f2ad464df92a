import { boundedTotal } from '../../domain/pagination';

describe('boundedTotal', () => {
  it('answers an exact total while the count stayed under its bound', () => {
    expect(boundedTotal(0, 200)).toEqual({ total: 0 });
    expect(boundedTotal(199, 200)).toEqual({ total: 199 });
  });

  it('answers totalAtLeast, and no total, once the count reached its bound', () => {
    expect(boundedTotal(200, 200)).toEqual({ totalAtLeast: 200 });
    expect(boundedTotal(200, 200)).not.toHaveProperty('total');
  });
});
