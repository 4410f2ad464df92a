import { createCipheriv, randomBytes } from 'node:crypto';
import type { SecretBox } from '../../db/secrets';

/**
 * A value as servers sealed it before ciphertexts were bound to their workspace and record
 * (`fd1:`, AES-256-GCM with no associated data), to test that such values still open and reseal.
 */
export function legacySeal(box: SecretBox, plaintext: string): string {
  const key = (box as unknown as { key: Buffer }).key;
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return `fd1:${Buffer.concat([nonce, cipher.getAuthTag(), body]).toString('base64')}`;
}
