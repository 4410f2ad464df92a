import { Migration } from '@mikro-orm/migrations';

/**
 * What the rollout board shows of a target, kept on its `release_target_state` row so the board
 * reads one row per target instead of grouping every release of its scope (ARCHITECTURE.md, "The
 * rollout board"): its newest release (the release of its newest version: versions rank by
 * creation, then id) with that release's version and phase, and the version of its current release.
 * Triggers keep the newest release and its phase whatever inserts or moves releases; the version is
 * stored beside the release so the comparison reads only versions, which a concurrent fan-out's
 * uncommitted releases cannot hide. The current version is written where the current release is
 * (engine/executor/releaseCompletion.ts).
 */
export class Migration0025NewestRelease extends Migration {
  override up(): void {
    this.addSql(
      `ALTER TABLE release_target_state
         ADD COLUMN newest_release_id uuid REFERENCES release(id) ON DELETE SET NULL,
         ADD COLUMN newest_version_id uuid REFERENCES deployment_version(id) ON DELETE SET NULL,
         ADD COLUMN newest_phase text,
         ADD COLUMN current_version_id uuid REFERENCES deployment_version(id) ON DELETE SET NULL`,
    );
    this.addSql(`
      CREATE FUNCTION release_mark_newest() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO release_target_state
               (resource_id, environment_id, deployment_id, workspace_id, newest_release_id, newest_version_id, newest_phase)
        SELECT DISTINCT ON (n.resource_id, n.environment_id, n.deployment_id)
               n.resource_id, n.environment_id, n.deployment_id, n.workspace_id, n.id, n.version_id, n.phase
          FROM inserted n JOIN deployment_version v ON v.id = n.version_id
         ORDER BY n.resource_id, n.environment_id, n.deployment_id, v.created_at DESC, v.id DESC
        ON CONFLICT (resource_id, environment_id, deployment_id) DO UPDATE
           SET newest_release_id = EXCLUDED.newest_release_id, newest_version_id = EXCLUDED.newest_version_id,
               newest_phase = EXCLUDED.newest_phase
         WHERE release_target_state.newest_version_id IS NULL
            OR (SELECT (o.created_at, o.id) FROM deployment_version o WHERE o.id = release_target_state.newest_version_id)
             < (SELECT (v.created_at, v.id) FROM deployment_version v WHERE v.id = EXCLUDED.newest_version_id);
        RETURN NULL;
      END $$`);
    this.addSql(`
      CREATE TRIGGER release_newest AFTER INSERT ON release
        REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION release_mark_newest()`);
    this.addSql(`
      CREATE FUNCTION release_mark_newest_phase() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE release_target_state SET newest_phase = NEW.phase
         WHERE resource_id = NEW.resource_id AND environment_id = NEW.environment_id
           AND deployment_id = NEW.deployment_id AND newest_release_id = NEW.id;
        RETURN NULL;
      END $$`);
    this.addSql(`
      CREATE TRIGGER release_newest_phase AFTER UPDATE OF phase ON release
        FOR EACH ROW WHEN (OLD.phase IS DISTINCT FROM NEW.phase) EXECUTE FUNCTION release_mark_newest_phase()`);
    this.addSql(`
      INSERT INTO release_target_state
             (resource_id, environment_id, deployment_id, workspace_id, newest_release_id, newest_version_id, newest_phase)
      SELECT DISTINCT ON (r.resource_id, r.environment_id, r.deployment_id)
             r.resource_id, r.environment_id, r.deployment_id, r.workspace_id, r.id, r.version_id, r.phase
        FROM release r JOIN deployment_version v ON v.id = r.version_id
       ORDER BY r.resource_id, r.environment_id, r.deployment_id, v.created_at DESC, v.id DESC
      ON CONFLICT (resource_id, environment_id, deployment_id) DO UPDATE
         SET newest_release_id = EXCLUDED.newest_release_id, newest_version_id = EXCLUDED.newest_version_id,
             newest_phase = EXCLUDED.newest_phase`);
    this.addSql(`
      UPDATE release_target_state s SET current_version_id = r.version_id
        FROM release r WHERE r.id = s.current_release_id`);
  }
}
