import { vi } from 'vitest';
import { METRIC } from '../../shared/metrics/names';

/**
 * The EMF documents (as parsed JSON) written to stdout while `run` runs and until the invocation's metrics are
 * flushed (the handler flushes after the answer has been streamed).
 */
export async function emitted(run: () => Promise<unknown>): Promise<Record<string, unknown>[]> {
  const lines: string[] = [];
  const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    lines.push(String(chunk));
    return true;
  });
  const documents = () =>
    lines
      .join('')
      .split('\n')
      .filter((line) => line.includes('"_aws"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  try {
    await run();
    await vi.waitFor(() => {
      if (!documents().some((document) => METRIC.serverErrors in document))
        throw new Error('not flushed yet');
    });
  } finally {
    write.mockRestore();
  }
  return documents();
}

/** The sum of one metric over the documents. */
export const total = (documents: Record<string, unknown>[], metric: string) =>
  documents.reduce((sum, document) => sum + (typeof document[metric] === 'number' ? document[metric] : 0), 0);
