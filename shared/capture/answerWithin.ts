/**
 * What `work` settles with, or 'late' once `ms` have passed without it: the browser's answers are waited for this way
 * wherever a page may keep them from coming. A rejection of `work` comes through as it is. The timer is cleared when
 * the race is over, and never keeps the process alive on its own. Once it fires, what has come in meanwhile is read
 * first (the event loop polls before `setImmediate`): after the process was held, an answer that waited behind the
 * timer is no late one (red team: a context taken for one that would not close, and the shared browser replaced).
 */
export async function answerWithin<T>(work: Promise<T>, ms: number): Promise<T | 'late'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => setImmediate(resolve, 'late'), ms);
    timer.unref();
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
