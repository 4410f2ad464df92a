import fs from 'node:fs';
import path from 'node:path';

/**
 * `npm run bench [-- name...]`: runs the named benchmarks (all when none is named), one after the
 * other, and prints one JSON document per benchmark.
 */
async function main(): Promise<void> {
  const available = fs
    .readdirSync(__dirname)
    .filter((file) => file.endsWith('.ts') && !['run.ts', 'environment.ts'].includes(file))
    .map((file) => path.basename(file, '.ts'))
    .sort();
  const requested = process.argv.slice(2);
  const unknown = requested.filter((name) => !available.includes(name));
  if (unknown.length > 0) {
    console.error(`Unknown benchmark(s): ${unknown.join(', ')}. Available: ${available.join(', ')}`);
    process.exit(2);
  }
  for (const name of requested.length > 0 ? requested : available) {
    const started = Date.now();
    const bench = (await import(path.join(__dirname, `${name}.ts`))) as {
      run: () => Promise<Record<string, unknown>>;
    };
    const figures = await bench.run();
    console.log(
      JSON.stringify({ benchmark: name, ...figures, wallSeconds: (Date.now() - started) / 1000 }, null, 2),
    );
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
