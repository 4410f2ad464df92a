import { Migration } from '@mikro-orm/migrations';

/**
 * The rollout board's sessions (application/boardSessions.ts): the board's cookie holds a random
 * session id, never an API key, and only its SHA-256 is stored. A session is bound to the key that
 * signed in and to that key's workspace; it ends at sign-out (`ended_at`), when the key is revoked
 * (the lookup reads the key's `revoked_at`) or twelve hours after sign-in (`expires_at`), and rows
 * past their expiry are purged at later sign-ins, by the expiry index.
 */
export class Migration0035BoardSessions extends Migration {
  override up(): void {
    this.addSql(`
      CREATE TABLE board_session (
        id_hash text PRIMARY KEY,
        api_key_id uuid NOT NULL REFERENCES api_key(id) ON DELETE CASCADE,
        workspace_id uuid NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        ended_at timestamptz
      )`);
    this.addSql(`CREATE INDEX board_session_api_key_idx ON board_session (api_key_id)`);
    this.addSql(`CREATE INDEX board_session_expires_idx ON board_session (expires_at)`);
  }
}
