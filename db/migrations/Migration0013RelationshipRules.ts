import { Migration } from '@mikro-orm/migrations';

/** Relationship rules: a variable value `{reference, path}` reads a field of the resource a rule relates. */
export class Migration0013RelationshipRules extends Migration {
  override up(): void {
    this.addSql(`
      CREATE TABLE relationship_rule (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
        name text NOT NULL,
        description text,
        reference text NOT NULL,
        cel text NOT NULL,
        metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    this.addSql('CREATE INDEX relationship_rule_reference ON relationship_rule (workspace_id, reference)');
  }
}
