/**
 * The variables of `env` named in `names`, and no other: how a process hands a child (Chromium, the renderer
 * process) only what it needs, so that whatever else it holds (AWS credentials, key files) never reaches it.
 */
export function allowedVariables(env: NodeJS.ProcessEnv, names: readonly string[]): Record<string, string> {
  return Object.fromEntries(
    names.flatMap((name) => {
      const value = env[name];
      return value !== undefined ? [[name, value]] : [];
    }),
  );
}
