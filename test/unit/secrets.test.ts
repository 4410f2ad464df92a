import { SecretBox } from '../../db/secrets';

describe('SecretBox', () => {
  const box = SecretBox.fromString(SecretBox.generateKey());

  it('round-trips values and never repeats a ciphertext', () => {
    const sealed = box.sealJson({ password: 'hunter2' });
    expect(SecretBox.isSealed(sealed)).toBe(true);
    expect(sealed).not.toContain('hunter2');
    expect(box.openJson(sealed)).toEqual({ password: 'hunter2' });
    expect(box.seal('same')).not.toBe(box.seal('same'));
  });

  it('refuses a value sealed with another key, or tampered with', () => {
    const other = SecretBox.fromString(SecretBox.generateKey());
    expect(() => other.open(box.seal('x'))).toThrow();
    const sealed = box.seal('payload');
    const tampered = sealed.slice(0, -4) + (sealed.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    expect(() => box.open(tampered)).toThrow();
  });

  it('accepts hex and base64 keys of 32 bytes only', () => {
    expect(() => SecretBox.fromString('ab'.repeat(32))).not.toThrow();
    expect(() => SecretBox.fromString('short')).toThrow(/32 bytes/);
  });
});
