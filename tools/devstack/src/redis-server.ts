import { probeTcp } from "./ports.js";
import type { ServerSpec } from "./child-server.js";

/** Sends a raw PING (after AUTH when a password is given) to Redis on 127.0.0.1:port; true on +PONG. */
export function redisPing(port: number, password?: string, timeoutMs = 1000): Promise<boolean> {
  return probeTcp(port, (sock, done) => {
    let buf = "";
    const answers = password === undefined ? 1 : 2;
    sock.on("data", (d) => {
      buf += d.toString("utf8");
      const lines = buf.split("\r\n");
      if (lines.length > answers) done(lines[answers - 1]?.startsWith("+PONG") === true);
    });
    sock.write(password === undefined ? "PING\r\n" : `AUTH ${password}\r\nPING\r\n`);
  }, timeoutMs);
}

/** redis-server on 127.0.0.1, append-only file in its data folder, no snapshots. */
export const redisServer: ServerSpec = {
  name: "redis",
  args: (port, dir, configFile) => [
    configFile,
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
  config: (password) => `requirepass ${password}\n`,
  ready: (port, _log, password) => redisPing(port, password),
};
