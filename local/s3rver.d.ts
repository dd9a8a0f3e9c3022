// s3rver ships no types; this is the part of its API the embedded image store uses.
declare module 's3rver' {
  import type { AddressInfo } from 'node:net';

  interface S3rverOptions {
    address?: string;
    port?: number;
    directory?: string;
    silent?: boolean;
    configureBuckets?: { name: string }[];
  }
  export default class S3rver {
    constructor(options?: S3rverOptions);
    /** The HTTP server, once run() has resolved. */
    httpServer?: import('node:http').Server;
    run(): Promise<AddressInfo>;
    close(): Promise<void>;
  }
}
