import { undoExtraEncoding } from '../../domain/celSchema';

/** `ctrlc api get resources -q` encodes its CEL filter once more than a query needs. */
describe('a ?cel= value encoded once too often', () => {
  it('is decoded again when only its decoding checks', () => {
    expect(undoExtraEncoding('resource', 'resource.kind+%3D%3D+%22K%22')).toBe('resource.kind == "K"');
  });

  it('is left alone when it checks as sent, or when neither spelling checks', () => {
    expect(undoExtraEncoding('resource', 'resource.name == "%41"')).toBe('resource.name == "%41"');
    expect(undoExtraEncoding('resource', 'resource.kind+%3D%3D')).toBe('resource.kind+%3D%3D');
    expect(undoExtraEncoding('resource', 'resource.kind %E0%A4%A')).toBe('resource.kind %E0%A4%A');
    expect(undoExtraEncoding('resource', undefined)).toBeUndefined();
  });
});
