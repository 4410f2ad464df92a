import fs from 'node:fs';
import path from 'node:path';

/** The package version, read from package.json beside the sources or the compiled output. */
export function flightdeckVersion(): string {
  for (const candidate of [
    path.join(__dirname, '..', 'package.json'),
    path.join(__dirname, '..', '..', 'package.json'),
  ]) {
    try {
      const manifest = JSON.parse(fs.readFileSync(candidate, 'utf8')) as { name?: string; version?: string };
      if (manifest.name === 'flightdeck' && manifest.version) return manifest.version;
    } catch {
      /* try the next location */
    }
  }
  return '0.0.0';
}
