import { randomBytes } from 'node:crypto';
import { SecretBox } from '../../db/secrets';
import { legacySeal } from '../helpers/legacySeal';

describe('SecretBox', () => {
  const key = randomBytes(32);
  const box = new SecretBox(key);
  const workspace = '01a21103-0000-7000-8000-000000000001';
  const agent = box.forRecord(workspace, 'job_agent', '01a21103-0000-7000-8000-0000000000a1');

  it('round-trips values and never repeats a ciphertext', () => {
    const sealed = agent.sealJson({ password: 'hunter2' });
    expect(SecretBox.isSealed(sealed)).toBe(true);
    expect(sealed).toMatch(/^fd2:/);
    expect(sealed).not.toContain('hunter2');
    expect(agent.openJson(sealed)).toEqual({ password: 'hunter2' });
    expect(agent.seal('same')).not.toBe(agent.seal('same'));
  });

  it('refuses a value sealed with another key, or tampered with', () => {
    const other = SecretBox.fromString(SecretBox.generateKey()).forRecord(workspace, 'job_agent', 'a');
    expect(() => other.open(agent.seal('x'))).toThrow(/cannot be opened/);
    const sealed = agent.seal('payload');
    const tampered = sealed.slice(0, -4) + (sealed.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    expect(() => agent.open(tampered)).toThrow(/cannot be opened/);
  });

  it('opens a value only for the workspace and record it was sealed for', () => {
    const sealed = agent.seal('token');
    const elsewhere = [
      box.forRecord(
        '01a21103-0000-7000-8000-000000000002',
        'job_agent',
        '01a21103-0000-7000-8000-0000000000a1',
      ),
      box.forRecord(workspace, 'job_agent', '01a21103-0000-7000-8000-0000000000a2'),
      box.forRecord(workspace, 'deployment', '01a21103-0000-7000-8000-0000000000a1'),
    ];
    for (const record of elsewhere) expect(() => record.open(sealed)).toThrow(/cannot be opened/);
    expect(box.forRecord(workspace, 'job_agent', '01a21103-0000-7000-8000-0000000000a1').open(sealed)).toBe(
      'token',
    );
  });

  it('still opens values sealed before binding, which are marked legacy', () => {
    const legacy = legacySeal(box, JSON.stringify('old secret'));
    expect(SecretBox.isSealed(legacy)).toBe(true);
    expect(SecretBox.isLegacy(legacy)).toBe(true);
    expect(SecretBox.isLegacy(agent.seal('new'))).toBe(false);
    expect(agent.openJson(legacy)).toBe('old secret');
  });

  it('refuses values sealed before binding once they are retired, and still opens bound ones', () => {
    const retired = new SecretBox(key);
    const records = retired.forRecord(workspace, 'job_agent', '01a21103-0000-7000-8000-0000000000a1');
    const legacy = legacySeal(retired, JSON.stringify('old secret'));
    const bound = records.sealJson('new secret');
    retired.refuseLegacy();
    expect(retired.refusesLegacy).toBe(true);
    expect(() => records.openJson(legacy)).toThrow(/predates binding \(fd1:\).*retired/);
    expect(records.openJson(bound)).toBe('new secret');
    expect(SecretBox.isSealed(legacy)).toBe(true);
  });

  it('accepts hex and base64 keys of 32 bytes only', () => {
    expect(() => SecretBox.fromString('ab'.repeat(32))).not.toThrow();
    expect(() => SecretBox.fromString('short')).toThrow(/32 bytes/);
  });
});
