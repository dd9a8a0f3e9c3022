import { request } from 'node:http';

/**
 * A POST to 127.0.0.1:`port` that names another host, as a page in the user's browser whose name was rebound to
 * loopback (DNS rebinding) sends it: the status of the answer.
 */
export function postFromReboundName(
  port: number | string,
  path: string,
  host: string,
  body: unknown,
): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path,
        headers: { Host: `${host}:${port}`, 'Content-Type': 'application/json' },
      },
      (res) => {
        res.resume();
        resolve(res.statusCode);
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}
