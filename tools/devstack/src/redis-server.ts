import { probeTcp } from "./ports.js";
import type { ServerSpec } from "./child-server.js";

/** Sends a raw PING to Redis on 127.0.0.1:port; true on +PONG. */
export function redisPing(port: number, timeoutMs = 1000): Promise<boolean> {
  return probeTcp(port, (sock, done) => {
    let buf = "";
    sock.on("data", (d) => {
      buf += d.toString("utf8");
      if (buf.includes("\r\n")) done(buf.startsWith("+PONG"));
    });
    sock.write("PING\r\n");
  }, timeoutMs);
}

/** redis-server on 127.0.0.1, append-only file in its data folder, no snapshots. */
export const redisServer: ServerSpec = {
  name: "redis",
  args: (port, dir) => [
    "--port", String(port),
    "--bind", "127.0.0.1",
    "--dir", dir,
    "--appendonly", "yes",
    "--save", "",
    // Test suites each take a database of their own (test-e2e/suite.ts).
    "--databases", "1024",
    "--daemonize", "no",
    "--protected-mode", "no",
  ],
  ready: (port) => redisPing(port),
};
