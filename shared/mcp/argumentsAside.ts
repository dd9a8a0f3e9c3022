/**
 * A `tools/call`'s arguments as the client sent them, and the message as the SDK is handed it: with an empty object in
 * their place, for the SDK's own parse of a call answers arguments that are no object as an internal error, its
 * validator's dump for text (red team). The screenshot use case refuses them instead, in its order of checks. A call
 * without params or a tool name (a string) is handed over as one to no tool, `malformed`, for the same reason. The SDK
 * is handed the tool's name alone: what else a call carries (`task`, `_meta`) is nothing the tools read, and the
 * SDK's parse of it would answer a bad one the same way (review, session 31).
 */
export function setArgumentsAside(message: unknown): {
  message: unknown;
  sentArguments?: unknown;
  malformed?: true;
} {
  if (!isRecord(message) || message.method !== 'tools/call') return { message };
  if (!isRecord(message.params) || typeof message.params.name !== 'string') {
    return { message: { ...message, params: { name: '', arguments: {} } }, malformed: true };
  }
  const { name, arguments: sentArguments } = message.params;
  return { message: { ...message, params: { name, arguments: {} } }, sentArguments };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
