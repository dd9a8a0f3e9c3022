import { connect, createServer } from 'node:net';
import { createEgressGate } from '../../shared/egress/egressGate';

/**
 * Run by test/security/machineAddress.test.ts in a network namespace of its own (its service listens on both families), where the public address given as
 * first argument is this machine's (on an interface, running or not, or a local route). Prints one JSON line: the
 * gate's verdict for that address on a developer's other service, and what a connection to it answers.
 */
const address = process.argv[2] ?? '93.184.215.14';
const service = createServer((socket) => socket.end('developer-service'));
await new Promise<void>((resolve) => service.listen(0, '::', resolve));
const port = (service.address() as { port: number }).port;
const gate = createEgressGate({ allowPrivateHosts: '' });
const verdict = await gate.check(address, port);
const answered = await new Promise<string>((resolve) => {
  const socket = connect(port, address);
  let data = '';
  socket.on('data', (chunk) => {
    data += chunk;
  });
  socket.on('end', () => resolve(data));
  socket.on('error', (error: NodeJS.ErrnoException) => resolve(`error ${error.code}`));
});
service.close();
process.stdout.write(`${JSON.stringify({ verdict, answered })}\n`);
process.exit(0);
