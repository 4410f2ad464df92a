import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { ConflictError } from '../domain/errors';

/**
 * The records that own sealed values. Each sealed value is bound to its workspace and its owner:
 * an agent's credentials, a deployment's agent entries and variables, a version's agent
 * configuration, a resource's variables, a policy's probe headers, a variable set's variables, and
 * a release's job snapshots, a runbook's agent entries, a runbook run's job snapshots, a webhook's secret and a workspace secret's value. Each kind
 * is its record's table name (a runbook's is `workflow`, a run's `workflow_run`): sealed values
 * are bound to it, so it never changes.
 */
export type SealOwnerKind =
  | 'job_agent'
  | 'deployment'
  | 'version'
  | 'resource'
  | 'policy'
  | 'variable_set'
  | 'release'
  | 'workflow'
  | 'workflow_run'
  | 'webhook'
  | 'workspace_secret';

/** Sealing and opening for one owner record: what stores and activities hold. */
export interface RecordSecrets {
  seal(plaintext: string): string;
  /** The plaintext; a SealedValueError when malformed, sealed under another key, or another record's. */
  open(sealed: string): string;
  sealJson(value: unknown): string;
  openJson(sealed: string): unknown;
}

const LEGACY_PREFIX = 'fd1:';
const PREFIX = 'fd2:';
const HEADER = 28; // nonce (12) and tag (16)

/**
 * Encryption at rest for sensitive values: AES-256-GCM with a random nonce per value, and the
 * owner's workspace and record as associated data, so a ciphertext copied into another record or
 * workspace (a planted `$sealed`, a restored row) does not open there. A sealed value is the string
 * `fd2:<base64 of nonce | tag | ciphertext>`. Values sealed before binding (`fd1:`, no associated
 * data) open anywhere, so they open only until `flightdeck admin reseal` has rewritten them bound:
 * once it has, `refuseLegacy` makes the box refuse them (db/legacySeals.ts).
 */
export class SecretBox {
  private legacyRefused = false;

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
    return typeof value === 'string' && (value.startsWith(PREFIX) || value.startsWith(LEGACY_PREFIX));
  }

  /** Whether a sealed value predates binding (what `admin reseal` rewrites). */
  static isLegacy(value: unknown): boolean {
    return typeof value === 'string' && value.startsWith(LEGACY_PREFIX);
  }

  /** From now on a value sealed before binding does not open: every one was rewritten bound. */
  refuseLegacy(): void {
    this.legacyRefused = true;
  }

  get refusesLegacy(): boolean {
    return this.legacyRefused;
  }

  /** Sealing and opening for the values that `kind` record `id` of `workspaceId` owns. */
  forRecord(workspaceId: string, kind: SealOwnerKind, id: string): RecordSecrets {
    const aad = Buffer.from(`flightdeck|${workspaceId}|${kind}|${id}`, 'utf8');
    const seal = (plaintext: string) => this.seal(plaintext, aad);
    const open = (sealed: string) => this.open(sealed, aad);
    return {
      seal,
      open,
      sealJson: (value) => seal(JSON.stringify(value)),
      openJson: (sealed) => {
        const text = open(sealed);
        try {
          return JSON.parse(text);
        } catch {
          throw new SealedValueError('a sealed value does not hold JSON');
        }
      },
    };
  }

  private seal(plaintext: string, aad: Buffer): string {
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, nonce);
    cipher.setAAD(aad);
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return PREFIX + Buffer.concat([nonce, cipher.getAuthTag(), body]).toString('base64');
  }

  private open(sealed: string, aad: Buffer): string {
    if (!SecretBox.isSealed(sealed)) throw new SealedValueError('not a sealed value');
    const legacy = SecretBox.isLegacy(sealed);
    if (legacy && this.legacyRefused) {
      throw new SealedValueError('it predates binding (fd1:), and `admin reseal` has retired such values');
    }
    const raw = Buffer.from(sealed.slice(PREFIX.length), 'base64');
    if (raw.length < HEADER) throw new SealedValueError('a sealed value is truncated');
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12));
      if (!legacy) decipher.setAAD(aad);
      decipher.setAuthTag(raw.subarray(12, HEADER));
      return Buffer.concat([decipher.update(raw.subarray(HEADER)), decipher.final()]).toString('utf8');
    } catch {
      throw new SealedValueError('it does not open with this server’s key for this record');
    }
  }
}

/**
 * A stored sealed value that cannot be opened: corrupted, sealed under another secret key, or
 * copied from another record. A conflict, not a crash: the request that needed it changes nothing
 * (a claim leaves its job queued).
 */
export class SealedValueError extends ConflictError {
  constructor(reason: string) {
    super(
      `A stored secret cannot be opened (${reason}): it is damaged, was copied from another record, or every server does not share one FLIGHTDECK_SECRET_KEY`,
      'sealed_value_unreadable',
    );
  }
}
