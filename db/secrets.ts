import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { ConflictError } from '../domain/errors';

/**
 * Encryption at rest for sensitive values (variables, agent credentials): AES-256-GCM with a
 * random nonce per value. A sealed value is the string `fd1:<base64 of nonce | tag | ciphertext>`.
 */
export class SecretBox {
  private static readonly PREFIX = 'fd1:';

  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('the secret key must be 32 bytes');
  }

  /** Parses FLIGHTDECK_SECRET_KEY: 32 bytes as base64 (44 characters) or hex (64 characters). */
  static fromString(value: string): SecretBox {
    const trimmed = value.trim();
    const key = /^[0-9a-f]{64}$/i.test(trimmed)
      ? Buffer.from(trimmed, 'hex')
      : Buffer.from(trimmed, 'base64');
    if (key.length !== 32) throw new Error('FLIGHTDECK_SECRET_KEY must be 32 bytes, as base64 or hex');
    return new SecretBox(key);
  }

  static generateKey(): string {
    return randomBytes(32).toString('base64');
  }

  static isSealed(value: unknown): value is string {
    return typeof value === 'string' && value.startsWith(SecretBox.PREFIX);
  }

  seal(plaintext: string): string {
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, nonce);
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return SecretBox.PREFIX + Buffer.concat([nonce, cipher.getAuthTag(), body]).toString('base64');
  }

  /** The plaintext; a SealedValueError when the value is malformed or was sealed with another key. */
  open(sealed: string): string {
    if (!SecretBox.isSealed(sealed)) throw new SealedValueError('not a sealed value');
    const raw = Buffer.from(sealed.slice(SecretBox.PREFIX.length), 'base64');
    if (raw.length < 28) throw new SealedValueError('a sealed value is truncated');
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12));
      decipher.setAuthTag(raw.subarray(12, 28));
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
    } catch {
      throw new SealedValueError('a sealed value does not open with this server’s secret key');
    }
  }

  /** Any JSON value, sealed. */
  sealJson(value: unknown): string {
    return this.seal(JSON.stringify(value));
  }

  openJson(sealed: string): unknown {
    const text = this.open(sealed);
    try {
      return JSON.parse(text);
    } catch {
      throw new SealedValueError('a sealed value does not hold JSON');
    }
  }
}

/**
 * A stored sealed value that cannot be opened: corrupted, or sealed under another secret key. A
 * conflict, not a crash: the request that needed it changes nothing (a claim leaves its job queued).
 */
export class SealedValueError extends ConflictError {
  constructor(reason: string) {
    super(
      `A stored secret cannot be opened (${reason}); check that every server shares one FLIGHTDECK_SECRET_KEY`,
      'sealed_value_unreadable',
    );
  }
}
