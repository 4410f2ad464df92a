import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { temporalCacheDir } from '../../cli/temporalCli';
import { workerMallocEnv } from '../../worker/tuning';

/**
 * docker-compose.yml cannot run on the development machines (no Docker engine), so its topology is
 * checked here: the roles, their replicas and order, health checks, and that no secret is written
 * in it. `docker compose config` validates it too where the client has the compose plugin.
 */

const ROOT = path.resolve(__dirname, '..', '..');
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');

interface Service {
  image?: string;
  build?: unknown;
  command?: string[];
  restart?: string;
  ports?: unknown[];
  expose?: string[];
  environment?: Record<string, unknown>;
  depends_on?: Record<string, { condition: string }>;
  deploy?: { replicas?: number };
  healthcheck?: { test?: string[] };
  volumes?: string[];
}

const composeText = read('docker-compose.yml');
const compose = YAML.parse(composeText, { merge: true }) as { services: Record<string, Service> };
const services = compose.services;
const FLIGHTDECK_ROLES = ['migrate', 'api', 'worker'];

/** `${NAME:?message}`: compose refuses to start while NAME is unset or empty. */
const REQUIRED_INTERPOLATION = /^\$\{([A-Z][A-Z0-9_]*):\?[^}]*\}$/;
const SECRET_NAME = /(PASSWORD|PWD|SECRET|TOKEN)|(^|_)KEY$/;

/** Services another one waits for to finish: the one-shot jobs. */
function oneShots(): Set<string> {
  const names = new Set<string>();
  for (const service of Object.values(services)) {
    for (const [name, dependency] of Object.entries(service.depends_on ?? {})) {
      if (dependency.condition === 'service_completed_successfully') names.add(name);
    }
  }
  return names;
}

describe('docker-compose.yml', () => {
  it('has PostgreSQL, a full Temporal server on it with its UI, and the three Flightdeck roles', () => {
    expect(Object.keys(services).sort()).toEqual(
      [
        'postgres',
        'temporal-schema',
        'temporal',
        'temporal-namespace',
        'temporal-ui',
        'migrate',
        'api',
        'worker',
        'proxy',
      ].sort(),
    );
    expect(services.temporal!.image).toMatch(/^temporalio\/server:/);
    expect(services.temporal!.environment).toMatchObject({ DB: 'postgres12', POSTGRES_SEEDS: 'postgres' });
    expect(services['temporal-ui']!.image).toMatch(/^temporalio\/ui:/);
    for (const role of FLIGHTDECK_ROLES) {
      expect(services[role]!.command).toEqual([role]);
      expect(services[role]!.build).toBe('.');
    }
  });

  it('runs at least two API and two worker replicas, the APIs only behind the proxy', () => {
    for (const role of ['api', 'worker']) {
      expect(services[role]!.deploy?.replicas).toBeGreaterThanOrEqual(2);
      expect(services[role]!.ports).toBeUndefined();
    }
    expect(services.proxy!.depends_on).toMatchObject({ api: { condition: 'service_healthy' } });
    const conf = services.proxy!.volumes!.find((volume) => volume.includes('nginx.conf'))!;
    expect(read(conf.split(':')[0]!)).toContain('http://api:8080');
    expect(services.api!.environment!.FLIGHTDECK_HOST).toBe('0.0.0.0');
  });

  it('runs the worker with the allocator thresholds `flightdeck start` gives its own, the API without', () => {
    const thresholds = workerMallocEnv({});
    expect(services.worker!.environment).toMatchObject(
      Object.fromEntries(Object.entries(thresholds).map(([key, value]) => [key, Number(value)])),
    );
    for (const key of Object.keys(thresholds)) expect(services.api!.environment![key]).toBeUndefined();
  });

  it("serves each API's and each worker's /metrics on the compose network only, without tenant labels unless asked", () => {
    for (const role of ['api', 'worker']) {
      const service = services[role]!;
      expect(service.ports).toBeUndefined();
      expect(service.environment!.FLIGHTDECK_METRICS_PORT).toEqual(expect.any(Number));
      expect(service.expose).toEqual(
        expect.arrayContaining([String(service.environment!.FLIGHTDECK_METRICS_PORT)]),
      );
      expect(service.environment).toMatchObject({
        FLIGHTDECK_METRICS_HOST: '0.0.0.0',
        FLIGHTDECK_METRICS_TENANT_LABELS: '${FLIGHTDECK_METRICS_TENANT_LABELS:-false}',
      });
    }
    expect(read('deploy/nginx.conf')).not.toMatch(/:9464/);
  });

  it('runs migrations and the schema jobs once, before the services that need them', () => {
    const jobs = oneShots();
    expect([...jobs].sort()).toEqual(['migrate', 'temporal-namespace', 'temporal-schema']);
    for (const job of jobs) expect(services[job]!.restart).toBe('on-failure');
    for (const role of ['api', 'worker']) {
      expect(services[role]!.depends_on).toMatchObject({
        migrate: { condition: 'service_completed_successfully' },
        'temporal-namespace': { condition: 'service_completed_successfully' },
      });
    }
    expect(services.temporal!.depends_on).toMatchObject({
      'temporal-schema': { condition: 'service_completed_successfully' },
    });
  });

  it('has a health check on every long-running service', () => {
    const jobs = oneShots();
    const longRunning = Object.keys(services).filter((name) => !jobs.has(name));
    expect(longRunning.length).toBeGreaterThanOrEqual(6);
    for (const name of longRunning) {
      expect({ name, test: services[name]!.healthcheck?.test?.length }).toEqual({
        name,
        test: expect.any(Number),
      });
    }
    expect(services.api!.healthcheck!.test).toEqual(['CMD', 'node', 'dist/cli/healthcheck.js', 'api']);
    expect(services.worker!.healthcheck!.test).toEqual(['CMD', 'node', 'dist/cli/healthcheck.js', 'worker']);
  });

  it('writes no secret: every secret-looking value is a required interpolation, documented in .env.example', () => {
    const required = new Set<string>();
    for (const [name, service] of Object.entries(services)) {
      for (const [key, value] of Object.entries(service.environment ?? {})) {
        const text = String(value);
        if (SECRET_NAME.test(key)) {
          expect({ name, key, value: text }).toEqual({
            name,
            key,
            value: expect.stringMatching(REQUIRED_INTERPOLATION),
          });
        }
        // A password inside a URL: postgres://user:<password>@host
        const password = /:\/\/[^:/@]+:([^@]+)@/.exec(text)?.[1];
        if (password !== undefined) {
          expect({ name, key, password }).toEqual({
            name,
            key,
            password: expect.stringMatching(REQUIRED_INTERPOLATION),
          });
        }
      }
    }
    for (const match of composeText.matchAll(/\$\{([A-Z][A-Z0-9_]*):\?/g)) required.add(match[1]!);
    expect([...required].sort()).toEqual([
      'FLIGHTDECK_ADMIN_TOKEN',
      'FLIGHTDECK_SECRET_KEY',
      'POSTGRES_PASSWORD',
    ]);
    const example = read('.env.example');
    for (const name of required) expect(example).toMatch(new RegExp(`^${name}=$`, 'm'));
  });

  // Read by glibc, not Flightdeck: the worker's allocator thresholds (worker/tuning.ts `workerMallocEnv`).
  const MALLOC_TUNABLES = Object.keys(workerMallocEnv({}));

  it('gives the Flightdeck roles only variables cli/config.ts reads (or glibc its tunables), the same in every role', () => {
    const config = read('cli/config.ts');
    // `migrate` has the shared block as it is; the long-running roles add their listeners to it.
    const shared = Object.keys(services.migrate!.environment!).sort();
    expect(shared).toEqual(
      expect.arrayContaining([
        'DATABASE_URL',
        'TEMPORAL_ADDRESS',
        'TEMPORAL_TASK_QUEUE',
        'FLIGHTDECK_SECRET_KEY',
      ]),
    );
    for (const role of FLIGHTDECK_ROLES) {
      const keys = Object.keys(services[role]!.environment!);
      expect(keys).toEqual(expect.arrayContaining(shared));
      for (const key of keys) {
        const known = config.includes(`  ${key}:`) || MALLOC_TUNABLES.includes(key);
        expect({ role, key, known }).toEqual({ role, key, known: true });
      }
    }
  });

  // The docker CLI exists on the development machines, its compose plugin not always: then the one
  // scripts/docker-compose-plugin.sh builds into the user cache (CI runs it first) stands in.
  const candidates = [undefined, cachedComposePlugin()];
  const found = candidates.findIndex(
    (dir) =>
      dir !== null && spawnSync('docker', ['compose', 'version'], { env: dockerEnv(dir) }).status === 0,
  );
  const withCompose = found !== -1;
  const dockerConfig = withCompose ? candidates[found] : undefined;
  const compose = (env: Record<string, string>) =>
    spawnSync('docker', ['compose', '--file', 'docker-compose.yml', 'config', '--quiet'], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...dockerEnv(dockerConfig), ...env },
    });
  const secrets = {
    POSTGRES_PASSWORD: 'check-only',
    FLIGHTDECK_SECRET_KEY: 'check-only',
    FLIGHTDECK_ADMIN_TOKEN: 'check-only-token',
  };
  (withCompose ? it : it.skip)(
    withCompose
      ? 'is accepted by `docker compose config`, which refuses it while a secret is unset'
      : '`docker compose config` (skipped: no compose plugin; run scripts/docker-compose-plugin.sh; the checks above ran)',
    () => {
      const accepted = compose(secrets);
      expect({ status: accepted.status, stderr: accepted.stderr }).toEqual({ status: 0, stderr: '' });
      const refused = compose({ ...secrets, FLIGHTDECK_SECRET_KEY: '' });
      expect(refused.status).not.toBe(0);
      expect(refused.stderr).toContain('FLIGHTDECK_SECRET_KEY');
    },
  );
});

/** The DOCKER_CONFIG directory scripts/docker-compose-plugin.sh fills, if it has. */
function cachedComposePlugin(): string | null {
  const version = /^VERSION=(\S+)$/m.exec(read('scripts/docker-compose-plugin.sh'))![1]!;
  const dir = path.join(temporalCacheDir(), `docker-compose-${version}`);
  return fs.existsSync(path.join(dir, 'cli-plugins', 'docker-compose')) ? dir : null;
}

function dockerEnv(dockerConfigDir: string | null | undefined): NodeJS.ProcessEnv {
  return dockerConfigDir ? { ...process.env, DOCKER_CONFIG: dockerConfigDir } : { ...process.env };
}

describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');

  it('builds in stages and runs the compiled CLI as a non-root user on production dependencies', () => {
    const stages = [...dockerfile.matchAll(/^FROM \S+ AS (\S+)$/gm)].map((match) => match[1]);
    expect(stages).toEqual(expect.arrayContaining(['deps', 'build', 'prod-deps', 'runtime']));
    expect(dockerfile).toContain('npm install --omit=dev');
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toContain('ENTRYPOINT ["node", "dist/cli/main.js"]');
  });
});
