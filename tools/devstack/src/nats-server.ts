import { probeTcp } from "./ports.js";
import type { ServerSpec } from "./child-server.js";

/** Connects to NATS on 127.0.0.1:port; true when the server greets with INFO. */
export function natsInfo(port: number, timeoutMs = 1000): Promise<boolean> {
  return probeTcp(port, (sock, done) => {
    let buf = "";
    sock.on("data", (d) => {
      buf += d.toString("utf8");
      if (buf.includes("\r\n")) done(buf.startsWith("INFO "));
    });
  }, timeoutMs);
}

export const NATS_USER = "svc";

/** nats-server with JetStream on 127.0.0.1, its store in its data folder. */
export const natsServer: ServerSpec = {
  name: "nats",
  args: (port, dir, configFile) => ["-c", configFile, "-a", "127.0.0.1", "-p", String(port), "-js", "-sd", dir, "-n", "svc-local"],
  config: (password) => `authorization {\n  user: ${NATS_USER}\n  password: "${password}"\n}\n`,
  // The log line comes once JetStream has recovered its store; a bare INFO comes sooner.
  ready: async (port, newLog) => /Server is ready/.test(newLog()) && (await natsInfo(port)),
};
