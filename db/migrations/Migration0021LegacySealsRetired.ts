import { Migration } from '@mikro-orm/migrations';

/**
 * When `flightdeck admin reseal` found no value sealed before binding (`fd1:`) left to rewrite: from
 * then on no process opens one (db/legacySeals.ts). One row at most; none until a reseal completes.
 */
export class Migration0021LegacySealsRetired extends Migration {
  override up(): void {
    this.addSql(
      `CREATE TABLE legacy_seal_retirement (
         only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
         retired_at timestamptz NOT NULL DEFAULT now()
       )`,
    );
  }
}
