import { expect, vi } from 'vitest';
import { logger } from '../../shared/logger';

/**
 * What the logger writes (its own console on stdout and stderr) while `run` runs, at INFO; with `until`, until a line
 * holds it (the renderer process's lines reach this process's streams through a pipe, a moment after its answer).
 */
export async function logged(run: () => Promise<unknown>, until?: string): Promise<string> {
  const lines: string[] = [];
  const capture = (chunk: unknown) => {
    lines.push(String(chunk));
    return true;
  };
  vi.spyOn(process.stdout, 'write').mockImplementation(capture);
  vi.spyOn(process.stderr, 'write').mockImplementation(capture);
  const level = logger.getLevelName();
  logger.setLogLevel('INFO');
  try {
    await run();
    if (until) await vi.waitFor(() => expect(lines.join('')).toContain(until), { timeout: 10_000 });
  } finally {
    logger.setLogLevel(level);
    vi.restoreAllMocks();
  }
  return lines.join('');
}
