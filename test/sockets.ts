/** Idle connections for tests of connection limits. */
import net from 'node:net';

export interface Idle {
  socket: net.Socket;
  /** Whether the server (or the client) has closed it. */
  closed: boolean;
}

/**
 * openIdle opens `count` connections to 127.0.0.1:`port` from `localAddress` that send nothing, one
 * after another, each once it is connected or closed (a server past its limit closes it at once).
 */
export async function openIdle(port: number, count: number, localAddress = '127.0.0.1'): Promise<Idle[]> {
  const all: Idle[] = [];
  for (let i = 0; i < count; i++) {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress });
    const idle = { socket, closed: false };
    socket.on('error', () => {});
    socket.on('close', () => (idle.closed = true));
    await new Promise((resolve) => {
      socket.once('connect', resolve);
      socket.once('close', resolve);
    });
    all.push(idle);
  }
  return all;
}
