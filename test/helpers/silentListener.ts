import { spawn } from 'node:child_process';
import { connect, type Socket } from 'node:net';

/**
 * A loopback port where a connection hangs as to a black hole: a listener (python3, which the machines have) with a
 * backlog of 0 that never accepts, its accept queue filled, drops SYNs (Linux).
 */
export async function startSilentListener(): Promise<{ port: number; close(): void }> {
  const holder = spawn(
    'python3',
    [
      '-c',
      'import socket,time\ns=socket.socket()\ns.bind(("127.0.0.1",0))\ns.listen(0)\nprint(s.getsockname()[1],flush=True)\ntime.sleep(300)',
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const port = Number(
    await new Promise<string>((resolve) => holder.stdout?.once('data', (data) => resolve(String(data)))),
  );
  const fillers: Socket[] = [];
  for (let i = 0; i < 2; i++) {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => {});
    fillers.push(socket);
  }
  await new Promise((resolve) => setTimeout(resolve, 300));
  return {
    port,
    close() {
      for (const socket of fillers) socket.destroy();
      holder.kill();
    },
  };
}
