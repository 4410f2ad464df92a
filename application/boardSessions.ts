import { createHash, randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { ApiKeyPrincipal, Principal } from '../domain/principal';
import { preparedStatement, runPrepared } from '../db/preparedStatements';
import { AUTHENTICATED_KEY_COLUMNS, authenticatedKey, type AuthenticatedKeyRow } from './apiKeys';

const SESSION_PREFIX = 'fds_';
/** A session id's length: the prefix and 256 random bits in base64url. */
const SESSION_ID_LENGTH = SESSION_PREFIX.length + 43;

/** How long a board session lasts after its sign-in. */
const SESSION_LIFETIME = "interval '12 hours'";

function hashSessionId(sessionId: string): string {
  return createHash('sha256').update(sessionId).digest('hex');
}

/**
 * Runs on every board request: the session's key, as `ApiKeyStore.authenticate` reads a key,
 * while the session is open and the key unrevoked.
 */
const RESOLVE = preparedStatement(
  'resolve_board_session',
  `SELECT ${AUTHENTICATED_KEY_COLUMNS}
     FROM board_session
     JOIN api_key ON api_key.id = board_session.api_key_id
                 AND api_key.workspace_id = board_session.workspace_id
    WHERE board_session.id_hash = $1
      AND board_session.ended_at IS NULL
      AND board_session.expires_at > now()
      AND api_key.revoked_at IS NULL`,
);

export interface OpenedBoardSession {
  /** The secret the board's cookie carries: returned once, only its hash stored. */
  sessionId: string;
  expiresAt: Date;
}

/**
 * The rollout board's sessions: a sign-in with a workspace key opens one, bound to that key, and
 * the board's cookie carries its random id instead of the key. It ends at sign-out, when its key is
 * revoked (its lookup reads the key's `revoked_at`) or when it expires.
 */
export class BoardSessionStore {
  constructor(private readonly em: EntityManager) {}

  /** A new session for a key that signed in; sessions past their expiry are purged on the way. */
  async open(principal: ApiKeyPrincipal): Promise<OpenedBoardSession> {
    const sessionId = `${SESSION_PREFIX}${randomBytes(32).toString('base64url')}`;
    const connection = this.em.getConnection();
    await connection.execute('DELETE FROM board_session WHERE expires_at <= now()', [], 'run');
    // Raw rows carry timestamps as PostgreSQL's text.
    const [opened] = await connection.execute<{ expires_at: string }[]>(
      `INSERT INTO board_session (id_hash, api_key_id, workspace_id, expires_at)
       VALUES (?, ?, ?, now() + ${SESSION_LIFETIME}) RETURNING expires_at`,
      [hashSessionId(sessionId), principal.apiKeyId, principal.workspaceId],
    );
    return { sessionId, expiresAt: new Date(opened!.expires_at) };
  }

  /** The key an open session acts as; undefined for an unknown, ended or expired session or a revoked key. */
  async resolve(sessionId: string): Promise<Principal | undefined> {
    if (!sessionId.startsWith(SESSION_PREFIX) || sessionId.length !== SESSION_ID_LENGTH) return undefined;
    const [row] = await runPrepared<AuthenticatedKeyRow>(this.em, RESOLVE, [hashSessionId(sessionId)]);
    return row && authenticatedKey(this.em, row);
  }

  /** Ends a session (sign-out): its id is refused from then on. An unknown or ended one is left alone. */
  async end(sessionId: string): Promise<void> {
    await this.em
      .getConnection()
      .execute(
        'UPDATE board_session SET ended_at = now() WHERE id_hash = ? AND ended_at IS NULL',
        [hashSessionId(sessionId)],
        'run',
      );
  }
}
