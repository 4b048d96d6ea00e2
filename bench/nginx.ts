// nginx as a reference reverse proxy in front of the artifacts service: one worker (the gateway
// is one process too), keep-alive upstream connections, and the gateway's signed identity headers
// set per exact bench path (`location =`), so nginx does what the gateway does minus the key check.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface NginxLocation {
  path: string;
  headers: Record<string, string>;
}

export interface RunningNginx {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** The nginx binary, or undefined when it is not installed. */
export function findNginx(): string | undefined {
  for (const p of ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx", "/usr/local/bin/nginx"]) if (existsSync(p)) return p;
  const r = spawnSync("sh", ["-c", "command -v nginx"], { encoding: "utf8" });
  const p = r.stdout.trim();
  return r.status === 0 && p ? p : undefined;
}

const quote = (v: string) => `"${v.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;

export function nginxConfig(dir: string, port: number, upstream: string, locations: NginxLocation[]): string {
  const up = new URL(upstream);
  const tmp = join(dir, "tmp");
  const locs = locations
    .map(
      (l) => `    location = ${l.path} {
      proxy_pass http://artifacts;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host ${up.host};
${Object.entries(l.headers)
  .map(([k, v]) => `      proxy_set_header ${k} ${quote(v)};`)
  .join("\n")}
    }`,
    )
    .join("\n");
  return `# written by bench/run.ts; regenerated with fresh signatures before each use
daemon off;
master_process on;
worker_processes 1;
${process.getuid?.() === 0 ? "user root;\n" : ""}pid ${join(dir, "nginx.pid")};
error_log ${join(dir, "error.log")} warn;

events {
  worker_connections 4096;
}

http {
  access_log off;
  sendfile on;
  tcp_nodelay on;
  keepalive_timeout 65s;
  keepalive_requests 1000000;
  client_body_temp_path ${tmp}/client_body;
  proxy_temp_path ${tmp}/proxy;
  fastcgi_temp_path ${tmp}/fastcgi;
  uwsgi_temp_path ${tmp}/uwsgi;
  scgi_temp_path ${tmp}/scgi;
  # Stream large bodies through memory buffers, never through temp files.
  proxy_buffering on;
  proxy_buffers 16 64k;
  proxy_max_temp_file_size 0;

  upstream artifacts {
    server ${up.host};
    keepalive 64;
    keepalive_requests 1000000;
    keepalive_timeout 60s;
  }

  server {
    listen 127.0.0.1:${port};
${locs}
    location / {
      return 404;
    }
  }
}
`;
}

async function waitListening(url: string, child: ChildProcess, dir: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) break;
    try {
      const res = await fetch(`${url}/__bench_probe`, { signal: AbortSignal.timeout(500) });
      await res.arrayBuffer();
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  let log = "";
  try {
    log = readFileSync(join(dir, "error.log"), "utf8").split("\n").slice(-20).join("\n");
  } catch {
    /* none */
  }
  throw new Error(`nginx did not start:\n${log}`);
}

/** Starts nginx in the foreground (`daemon off`) with everything under `dir`. */
export async function startNginx(bin: string, dir: string, port: number, upstream: string, locations: NginxLocation[]): Promise<RunningNginx> {
  for (const d of ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"]) mkdirSync(join(dir, "tmp", d), { recursive: true });
  const conf = join(dir, "nginx.conf");
  writeFileSync(conf, nginxConfig(dir, port, upstream, locations));
  // Its own process group, so that a forced stop takes the worker along with the master.
  const child = spawn(bin, ["-p", dir, "-c", conf, "-e", join(dir, "error.log")], { stdio: ["ignore", "ignore", "pipe"], detached: true });
  let stderr = "";
  child.stderr?.on("data", (d) => (stderr += d));
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      if (child.pid) process.kill(-child.pid, signal);
    } catch {
      /* already gone */
    }
  };
  const kill = () => {
    if (child.exitCode === null && child.signalCode === null) signalGroup("SIGKILL");
  };
  process.once("exit", kill);
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitListening(url, child, dir);
  } catch (err) {
    kill();
    throw new Error(`${(err as Error).message}\n${stderr}`);
  }
  return {
    url,
    pid: child.pid ?? 0,
    stop: () =>
      new Promise<void>((res) => {
        process.removeListener("exit", kill);
        if (child.exitCode !== null || child.signalCode !== null) return res();
        const timer = setTimeout(() => signalGroup("SIGKILL"), 5000);
        child.once("exit", () => {
          clearTimeout(timer);
          res();
        });
        child.kill("SIGTERM"); // fast shutdown: the master stops its worker, then exits
      }),
  };
}
