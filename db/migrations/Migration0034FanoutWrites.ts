import { Migration } from '@mikro-orm/migrations';

/**
 * Cheaper writes for a fan-out's batches (engine/executor/releaseFanout.ts), which insert releases, their
 * targets' state and their jobs, then update the same rows again in the same transaction: the foreign
 * keys of `release`, `release_target_state` and `job` are checked at commit. PostgreSQL checks every
 * foreign key of a row again whenever the transaction that inserted it updates it, and a deferred check
 * looks only at the row's last version (a batch's target state was checked three or four times over,
 * eleven keys each).
 */
export class Migration0034FanoutWrites extends Migration {
  override up(): void {
    this.addSql(`
      DO $$
      DECLARE fk record;
      BEGIN
        FOR fk IN SELECT conrelid::regclass AS tbl, conname FROM pg_constraint
                   WHERE contype = 'f' AND conrelid IN ('release'::regclass, 'release_target_state'::regclass, 'job'::regclass)
        LOOP
          EXECUTE format('ALTER TABLE %s ALTER CONSTRAINT %I DEFERRABLE INITIALLY DEFERRED', fk.tbl, fk.conname);
        END LOOP;
      END $$`);
  }
}
