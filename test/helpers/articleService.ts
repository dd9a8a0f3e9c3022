import { afterAll, beforeAll } from 'vitest';
import { ARTICLE_ROUTES } from './articlePages';
import { startTestLocalService, type TestLocalService } from './localService';
import { type PageServer, startPageServer } from './pageServer';

/**
 * The whole local service, allowed to capture a page server of article pages, started for the test file that calls
 * this (beforeAll) and closed after it; `balance` reads an account's credits with its session token.
 */
export function articleService() {
  const started: { site?: PageServer; service?: TestLocalService } = {};
  beforeAll(async () => {
    started.site = await startPageServer(ARTICLE_ROUTES);
    started.service = await startTestLocalService({ ALLOW_PRIVATE_HOSTS: started.site.hostPort });
  }, 120_000);
  afterAll(async () => {
    await started.service?.close();
    await started.site?.close();
  });
  const running = <T>(part: T | undefined): T => {
    if (!part) throw new Error('articleService() is used before its beforeAll ran');
    return part;
  };
  return {
    get site(): PageServer {
      return running(started.site);
    },
    get service(): TestLocalService {
      return running(started.service);
    },
    async balance(token: string): Promise<number> {
      const response = await running(started.service).request('/api/credits', { bearer: token });
      return (await response.json()).balance as number;
    },
  };
}
