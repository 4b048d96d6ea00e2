import { createServer, type Server } from "node:http";
import { connect } from "node:net";
import { chmod, lstat, unlink } from "node:fs/promises";
import type { FastifyInstance } from "fastify";

/**
 * A second listener of a service, on a Unix domain socket (`svc.socket`), for a gateway on the
 * same host (upstream-address.ts). It hands each request to the same fastify instance as the
 * TCP port, with the TCP server's timeouts, so both doors answer alike, `/health/*` included.
 */
export interface SocketListener {
  readonly path: string;
  /** Stops taking connections, waits for those under way and removes the socket file. */
  close(): Promise<void>;
}

/** Thrown when the path cannot be listened on: start-up is refused with it (it names the setting). */
export class SocketPathError extends Error {
  readonly setting = "svc.socket";
}

/** Answers whether a process accepts connections on the socket at `path`. */
function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = connect({ path });
    probe.once("connect", () => (probe.destroy(), resolve(true)));
    probe.once("error", () => resolve(false));
  });
}

/**
 * Makes `path` free to listen on: a socket file nobody listens on any more (a crash left it) is
 * removed; a live one, or a file that is not a socket, refuses the start rather than be removed.
 */
async function clearStale(path: string): Promise<void> {
  let stat;
  try {
    stat = await lstat(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
    throw new SocketPathError(`svc.socket ${path} cannot be read: ${(err as Error).message}`);
  }
  if (!stat.isSocket()) throw new SocketPathError(`svc.socket ${path} exists and is not a socket: it is left alone`);
  if (await answers(path)) throw new SocketPathError(`svc.socket ${path} is in use: another process listens on it`);
  await unlink(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== "ENOENT") throw new SocketPathError(`svc.socket ${path} is left from an earlier run and cannot be removed: ${err.message}`);
  });
}

export async function listenOnSocket(app: FastifyInstance, path: string): Promise<SocketListener> {
  await clearStale(path);
  const tcp = app.server;
  const server: Server = createServer(app.routing);
  server.keepAliveTimeout = tcp.keepAliveTimeout;
  server.headersTimeout = tcp.headersTimeout;
  server.requestTimeout = tcp.requestTimeout;
  server.timeout = tcp.timeout;
  // The same answers to a malformed request and to CONNECT as on the port (service.ts).
  for (const event of ["clientError", "connect"] as const) for (const listener of tcp.listeners(event)) server.on(event, listener as (...args: unknown[]) => void);

  // Only this user and its group may connect (others would bypass the gateway's checks): the
  // file is born 0660 (the umask holds while listen() binds, which it does at once) and set so.
  const umask = process.umask(0o117);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen({ path }, () => (server.off("error", reject), resolve()));
      process.umask(umask);
    });
  } catch (err) {
    throw new SocketPathError(`svc.socket ${path} cannot be listened on: ${(err as Error).message}`);
  } finally {
    process.umask(umask);
  }
  await chmod(path, 0o660);

  let closing: Promise<void> | undefined;
  return {
    path,
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }).then(() => unlink(path).catch(() => undefined))),
  };
}
