import { Migration } from '@mikro-orm/migrations';

/**
 * When each API key last authenticated a request, so operators can find unused keys before they
 * revoke them; written at most once a minute per key (application/apiKeys.ts), NULL until first use.
 */
export class Migration0007ApiKeyLastUsed extends Migration {
  override up(): void {
    this.addSql(`ALTER TABLE api_key ADD COLUMN last_used_at timestamptz`);
  }
}
