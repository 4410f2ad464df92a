import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * engine/jobMoves/ is the one owner of job status moves: it checks each against the move table and
 * performs the move's side effects. A status written anywhere else (raw SQL, or the ORM's entity)
 * would bypass both.
 */
const ROOT = path.join(__dirname, '..', '..');
const OWNER = path.join('engine', 'jobMoves');
const SOURCE_DIRS = [
  'api',
  'activities',
  'application',
  'bench',
  'cli',
  'db',
  'domain',
  'engine',
  'scripts',
  'worker',
  'workflows',
];

/** SQL that sets a job's status, and an ORM write of a job entity's status. */
const RAW_STATUS_WRITES = [
  /UPDATE\s+job\s+(?:(?:AS\s+)?(?!SET\b)\w+\s+)?SET\b[^;`]*?\bstatus\s*=/gi,
  /\bjob\.status\s*=(?!=)/g,
];

function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = path.join(dir, entry.name);
    if (entry.isDirectory()) return relative === path.join('db', 'migrations') ? [] : sourceFiles(relative);
    return /\.(ts|mjs|js)$/.test(entry.name) ? [relative] : [];
  });
}

function writesIn(text: string): string[] {
  return RAW_STATUS_WRITES.flatMap((pattern) => [...text.matchAll(pattern)].map((match) => match[0]));
}

function statusWrites(file: string): string[] {
  return writesIn(readFileSync(path.join(ROOT, file), 'utf8')).map((write) => `${file}: ${write}`);
}

describe('job status moves', () => {
  const files = SOURCE_DIRS.flatMap(sourceFiles);

  it('are written only by engine/jobMoves/', () => {
    const elsewhere = files.filter((file) => !file.startsWith(OWNER)).flatMap(statusWrites);
    expect(elsewhere).toEqual([]);
  });

  it('are found where they are written, so the check above can fail', () => {
    const owned = files.filter((file) => file.startsWith(OWNER)).flatMap(statusWrites);
    // The claim, the lease's expiry, a dispatch, a cancel (SQL), and a reported change (the entity).
    expect(owned.length).toBeGreaterThanOrEqual(5);
    const bypass =
      "em.execute(`UPDATE job SET message = ?, status = 'queued' WHERE id = ?`); job.status = 'failure';";
    expect(writesIn(bypass)).toHaveLength(2);
    expect(
      writesIn("UPDATE job j SET status = 'queued'; UPDATE job AS j SET status = 'failure'"),
    ).toHaveLength(2);
    expect(
      writesIn("UPDATE job_verification SET status = 'passed'; if (job.status === 'queued') {}"),
    ).toEqual([]);
  });
});
