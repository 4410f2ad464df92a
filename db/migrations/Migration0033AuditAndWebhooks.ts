import { Migration } from '@mikro-orm/migrations';

/**
 * The audit trail and webhooks (docs/behaviour.md "Audit trail", "Webhooks"). Audit events get
 * time-ordered ids (UUID version 7) from the database, so events written by SQL alone (a claim, a
 * fan-out) sort as the API's do, and `created_at` is the id's own millisecond: paging by id and by
 * time are one order. A webhook's deliveries are written by the statement that writes the events they
 * carry (a statement trigger over its new rows, so no writer can forget them), each with the outbox
 * row that starts its delivery workflow, on a relay lane of its own. A runbook run may end cancelled.
 */
export class Migration0033AuditAndWebhooks extends Migration {
  override up(): void {
    this.addSql(
      `CREATE FUNCTION flightdeck_uuid7() RETURNS uuid LANGUAGE sql VOLATILE AS $$
         SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
                  PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                  FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid
       $$`,
    );
    this.addSql(
      `CREATE TABLE audit_event (
         id uuid PRIMARY KEY DEFAULT flightdeck_uuid7(),
         workspace_id uuid NOT NULL,
         created_at timestamptz GENERATED ALWAYS AS
           (to_timestamp(('x' || substr(replace(id::text, '-', ''), 1, 12))::bit(48)::bigint / 1000.0)) STORED,
         actor_type text NOT NULL CHECK (actor_type IN ('key', 'agent', 'system')),
         actor_id text NOT NULL,
         actor_name text NOT NULL,
         action text NOT NULL,
         record_type text NOT NULL,
         record_id text NOT NULL,
         request_id text,
         changes jsonb NOT NULL DEFAULT '[]',
         details jsonb NOT NULL DEFAULT '{}',
         deployment_id uuid
       )`,
    );
    this.addSql(
      'CREATE INDEX audit_event_workspace_idx ON audit_event (workspace_id, created_at DESC, id DESC)',
    );
    this.addSql(
      'CREATE INDEX audit_event_deployment_idx ON audit_event (deployment_id, created_at DESC, id DESC) WHERE deployment_id IS NOT NULL',
    );
    this.addSql(
      `CREATE TABLE webhook (
         id uuid PRIMARY KEY,
         workspace_id uuid NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
         url text NOT NULL,
         events jsonb NOT NULL,
         secret text NOT NULL,
         description text,
         created_at timestamptz NOT NULL DEFAULT now(),
         updated_at timestamptz NOT NULL DEFAULT now()
       )`,
    );
    this.addSql('CREATE INDEX webhook_workspace_idx ON webhook (workspace_id)');
    this.addSql(
      `CREATE TABLE webhook_delivery (
         id uuid PRIMARY KEY DEFAULT flightdeck_uuid7(),
         webhook_id uuid NOT NULL REFERENCES webhook (id) ON DELETE CASCADE,
         workspace_id uuid NOT NULL,
         event_id uuid NOT NULL,
         event_type text NOT NULL,
         payload jsonb NOT NULL,
         status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
         attempts int NOT NULL DEFAULT 0,
         response_status int,
         duration_ms int,
         error text,
         attempt_log jsonb NOT NULL DEFAULT '[]',
         redelivery_of uuid,
         created_at timestamptz NOT NULL DEFAULT now(),
         completed_at timestamptz
       )`,
    );
    this.addSql('CREATE INDEX webhook_delivery_webhook_idx ON webhook_delivery (webhook_id, id DESC)');
    this.addSql(
      `CREATE FUNCTION audit_event_webhook_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
       DECLARE
         queued int;
       BEGIN
         -- Most events (a claim's, a fan-out's) find no webhook at all: one probe of a small table.
         IF NOT EXISTS (SELECT 1 FROM webhook) THEN
           RETURN NULL;
         END IF;
         WITH delivery AS (
           INSERT INTO webhook_delivery (webhook_id, workspace_id, event_id, event_type, payload)
           SELECT w.id, e.workspace_id, e.id, e.action,
                  jsonb_build_object(
                    'id', e.id, 'type', e.action,
                    'createdAt', to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                    'workspaceId', e.workspace_id,
                    'actor', jsonb_build_object('type', e.actor_type, 'id', e.actor_id, 'name', e.actor_name),
                    'record', jsonb_build_object('type', e.record_type, 'id', e.record_id),
                    'changes', e.changes, 'data', e.details)
             FROM inserted e JOIN webhook w ON w.workspace_id = e.workspace_id AND w.events @> to_jsonb(e.action)
           RETURNING id, workspace_id
         ), started AS (
           INSERT INTO outbox (kind, payload)
           SELECT 'webhook.deliver',
                  jsonb_build_object('kind', 'webhook.deliver', 'workspaceId', workspace_id, 'deliveryId', id)
             FROM delivery
           RETURNING id
         )
         SELECT count(*) INTO queued FROM started;
         IF queued > 0 THEN
           PERFORM pg_notify('flightdeck_outbox', 'webhooks');
         END IF;
         RETURN NULL;
       END
       $$`,
    );
    this.addSql(
      `CREATE TRIGGER audit_event_webhook_deliveries AFTER INSERT ON audit_event
         REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION audit_event_webhook_deliveries()`,
    );
    // A runbook run can be cancelled as a whole.
    this.addSql(
      `ALTER TABLE workflow_run DROP CONSTRAINT workflow_run_status_check,
         ADD CONSTRAINT workflow_run_status_check CHECK (status IN ('running', 'succeeded', 'failed', 'cancelled'))`,
    );
    // The relay's lanes (db/outbox.ts OUTBOX_LANE_SQL) gain one for webhook deliveries.
    this.addSql(
      `CREATE INDEX outbox_relay_lanes_idx ON outbox ((CASE WHEN kind = 'release.start' THEN 1 WHEN kind IN ('lease.start', 'lease.end') THEN 2 WHEN kind = 'webhook.deliver' THEN 3 ELSE 0 END), id)`,
    );
    this.addSql('DROP INDEX IF EXISTS outbox_relay_lane_idx');
  }
}
