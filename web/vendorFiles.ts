import { createRequire } from 'node:module';

/**
 * Files of npm packages the dashboard loads, by the name the page asks for. They are served from node_modules
 * locally (local/dashboardRoutes.ts) and copied into the dashboard bucket deployed (infra/dashboardSite.ts), so the
 * version package-lock.json pins is the one that runs, with no copy in the repository to fall behind.
 */
const VENDOR_MODULES: Readonly<Record<string, string>> = {
  // uPlot (MIT): the usage chart. Its ES module build, and the few styles its elements need.
  'uplot.js': 'uplot/dist/uPlot.esm.js',
  'uplot.css': 'uplot/dist/uPlot.min.css',
};

const require = createRequire(import.meta.url);

/** Where a vendor file is on disk, or undefined for a name that is not one. */
export function vendorFilePath(name: string): string | undefined {
  return Object.hasOwn(VENDOR_MODULES, name) ? require.resolve(VENDOR_MODULES[name] as string) : undefined;
}

/** Every vendor file: the name the page uses and where the file is. */
export function vendorFiles(): { name: string; path: string }[] {
  return Object.entries(VENDOR_MODULES).map(([name, module]) => ({ name, path: require.resolve(module) }));
}
