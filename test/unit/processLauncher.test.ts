import { ProcessLauncher } from '../../cli/processLauncher';

const NODE = process.execPath;

describe('ProcessLauncher', () => {
  const launcher = new ProcessLauncher();
  const request = {
    env: { PATH: process.env.PATH ?? '' },
    stdin: '',
    timeoutMs: 10_000,
    outputLimit: 1024,
    niceness: 10,
  };

  it('runs a process with its input and answers its exit code and output', async () => {
    const outcome = await launcher.run({
      ...request,
      command: NODE,
      args: ['-e', 'process.stdin.pipe(process.stdout); process.stderr.write("err"); process.exitCode = 3'],
      stdin: 'hello',
    });
    expect(outcome).toEqual({ code: 3, stdout: 'hello', stderr: 'err' });
  });

  it('runs the process at the niceness asked for, with only the environment given', async () => {
    const outcome = await launcher.run({
      ...request,
      command: NODE,
      args: [
        '-e',
        'setTimeout(() => console.log(require("os").getPriority(), Object.keys(process.env).join(",")), 200)',
      ],
    });
    expect(outcome.stdout.trim()).toBe('10 PATH');
  });

  it('stops a process past its timeout and says so', async () => {
    const outcome = await launcher.run({
      ...request,
      command: NODE,
      args: ['-e', 'setInterval(() => {}, 1000)'],
      timeoutMs: 300,
    });
    expect(outcome.stopped).toBe('process');
    expect(outcome.code).toBeNull();
  });

  it('keeps what a process prints up to the limit', async () => {
    const outcome = await launcher.run({
      ...request,
      command: NODE,
      args: ['-e', 'process.stdout.write("x".repeat(1 << 20))'],
    });
    expect(outcome.stdout.length).toBeGreaterThanOrEqual(1024);
    expect(outcome.stdout.length).toBeLessThan(1 << 20);
  });

  it('answers an error for a command that cannot start', async () => {
    await expect(launcher.run({ ...request, command: '/nonexistent/opa', args: [] })).rejects.toThrow(
      /ENOENT/,
    );
  });
});
