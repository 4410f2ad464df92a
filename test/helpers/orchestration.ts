import { randomUUID } from 'node:crypto';
import { eventually } from './eventually';
import { settled } from './settled';
import type { TestStack } from './stack';

/** Builders for orchestration tests: records through the HTTP API, and waits on what the workflows do. */

export interface Job {
  id: string;
  releaseId: string;
  status: string;
  resourceId: string;
  environmentId: string;
  deploymentId: string;
  message: string | null;
  dispatchContext: Record<string, unknown>;
}

export interface Release {
  id: string;
  releaseTargetKey: string;
  phase: string;
  versionId: string;
  resourceId: string;
  environmentId: string;
  deploymentId: string;
  evaluation: {
    decision: string;
    reason: string;
    rules: { kind: string; state: string; reason: string }[];
  } | null;
}

export function recordsApi(stack: TestStack) {
  const ws = `/v1/workspaces/${stack.workspaceId}`;
  const send = async (method: 'post' | 'put' | 'patch', path: string, body: object, expected: number[]) => {
    const res = await stack.http[method](`${ws}${path}`).set(stack.auth).send(body);
    if (!expected.includes(res.status)) {
      throw new Error(`${method.toUpperCase()} ${path} answered ${res.status}: ${JSON.stringify(res.body)}`);
    }
    return res.body;
  };
  const get = async <T>(path: string): Promise<T> => {
    const res = await stack.http.get(`${ws}${path}`).set(stack.auth);
    if (res.status !== 200)
      throw new Error(`GET ${path} answered ${res.status}: ${JSON.stringify(res.body)}`);
    return res.body as T;
  };

  return {
    ws,
    get,
    send,
    async system(name: string): Promise<string> {
      return (await send('post', '/systems', { name }, [202])).id;
    },
    async environment(name: string, resourceSelector: string, systemId: string): Promise<string> {
      const id = (await send('post', '/environments', { name, resourceSelector }, [202])).id;
      await send('put', `/systems/${systemId}/environments/${id}`, {}, [202]);
      return id;
    },
    async deployment(
      slug: string,
      systemId: string,
      options: { resourceSelector?: string; jobAgents?: object[] } = {},
    ): Promise<string> {
      const id = (await send('post', '/deployments', { name: slug, slug, ...options }, [202])).id;
      await send('put', `/systems/${systemId}/deployments/${id}`, {}, [202]);
      return id;
    },
    async agent(name: string, type: string, config: object = {}): Promise<string> {
      const id = randomUUID();
      await send('put', `/job-agents/${id}`, { name, type, config }, [202]);
      return id;
    },
    async resource(
      identifier: string,
      kind: string,
      metadata: Record<string, string>,
      extra: object = {},
    ): Promise<string> {
      return (
        await send(
          'put',
          `/resources/identifier/${encodeURIComponent(identifier)}`,
          { name: identifier, version: 'v1', kind, metadata, ...extra },
          [202],
        )
      ).id;
    },
    async version(deploymentId: string, tag: string, extra: object = {}): Promise<string> {
      return (await send('post', `/deployments/${deploymentId}/versions`, { tag, ...extra }, [200])).id;
    },
    async policy(body: object): Promise<string> {
      return (await send('post', '/policies', body, [202])).id;
    },
    /** The jobs alone, out of the list's `{job, release, …}` items. */
    async jobs(query = ''): Promise<Job[]> {
      return (await get<{ items: { job: Job }[] }>(`/jobs?limit=1000${query}`)).items.map((item) => item.job);
    },
    async releases(query = ''): Promise<Release[]> {
      return (await get<{ items: Release[] }>(`/releases?limit=1000${query}`)).items;
    },
    /** Reports a status; answers the job as it now is. */
    async report(jobId: string, status: string, message?: string) {
      return (await send('put', `/jobs/${jobId}/status`, { status, message }, [202])).job;
    },
    /** Waits until the jobs matching `query` number exactly `count`, and still do once the stack has settled. */
    async jobsSettleAt(count: number, query = '', what = `${count} jobs`): Promise<Job[]> {
      const jobs = await eventually(
        async () => {
          const found = await this.jobs(query);
          return found.length === count ? found : undefined;
        },
        { what, timeoutMs: 30_000 },
      );
      await settled(stack, `the stack to settle after ${what}`);
      const again = await this.jobs(query);
      if (again.length !== count)
        throw new Error(`expected ${count} jobs for "${query}", then saw ${again.length}`);
      return jobs;
    },
    async releaseWith(predicate: (release: Release) => boolean, what: string): Promise<Release> {
      return eventually(async () => (await this.releases()).find(predicate), { what, timeoutMs: 30_000 });
    },
  };
}

/** A UTC DTSTART line for a window starting at the given instant. */
export function dtstart(at: Date): string {
  return `DTSTART:${at.toISOString().replace(/[-:]/g, '').slice(0, 15)}`;
}
