/**
 * Written under DATA_DIR while the local service runs, so the operator's tools (credits, token) find the running
 * service of the same data directory. A module of its own, so those tools need not load the service to know it.
 */
export const STATE_FILE = 'local-service.json';
