// A real S3-compatible server for the tests and the bench: Ceph's RADOS Gateway from Debian's
// packages, as small as Ceph goes (one monitor, one OSD on a sparse file, one gateway, no
// manager), in a data folder of its own on ports picked for this run. The daemons daemonize:
// they are stopped by their pid files, and the reaper stops them if this process dies first.
import { randomBytes, randomUUID } from "node:crypto";
import { spawn } from "node:child_process";
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join, resolve } from "node:path";
import { ensureDebianPackages, findInPath } from "./binaries.js";
import { acquireLock } from "./data-folder-lock.js";
import { registerCleanup, unregisterCleanup } from "./exit-cleanup.js";
import { releasePort, reservePort } from "./ports.js";
import { pidAlive, procCmdline, readPidFile, sleep, tailOf } from "./process.js";
import { processReaper, type StopStep } from "./reaper.js";

/** Debian's packages of the object store: the daemons and the CLI that sets them up. */
export const CEPH_PACKAGES = ["ceph-mon", "ceph-osd", "radosgw", "ceph-common"] as const;

export interface ObjectStoreOptions {
  /** Absolute path; the cluster's data, pid files, logs and sockets live under it. Short paths only: a socket path has at most 107 bytes. */
  dataDir: string;
  /** Progress messages; default console.error. */
  log?: (line: string) => void;
  /** Readiness timeout in milliseconds (default 120000: a busy two-core machine). */
  readyTimeoutMs?: number;
  /** The sparse block file of the OSD, in bytes (default 20 GiB; only what is written takes disk). */
  blockBytes?: number;
}

export interface ObjectStore {
  /** http://127.0.0.1:<port> of the gateway (path-style addressing). */
  endpoint: string;
  region: string;
  accessKey: string;
  secretKey: string;
  port: number;
  dataDir: string;
  /** Creates a bucket (an existing one of ours is fine). */
  createBucket(name: string): Promise<void>;
  /** Process ids of the running daemons. */
  pids(): { mon?: number; osd?: number; rgw?: number };
  /** Stops every daemon; idempotent. */
  stop(): Promise<void>;
  /** Stops the gateway only (the object store "down"); startGateway brings it back on the same port. */
  stopGateway(): Promise<void>;
  startGateway(): Promise<void>;
  /** Freezes the gateway (SIGSTOP): it still accepts connections (the kernel does) but answers nothing, a hung store; resumeGateway thaws it. */
  pauseGateway(): void;
  resumeGateway(): void;
}

const DAEMONS = ["mon", "osd", "rgw"] as const;
type Daemon = (typeof DAEMONS)[number];
/** The Ceph name of each daemon ($name in ceph.conf). */
const CEPH_NAME: Record<Daemon, string> = { mon: "mon.a", osd: "osd.0", rgw: "client.rgw" };
const STOP_STEPS: StopStep[] = [["SIGTERM", 10_000], ["SIGKILL", 0]];
const REGION = "us-east-1";
const GiB = 1024 ** 3;

/** Runs a command to its end; rejects with its output when it fails. */
function run(cmd: string, args: string[], timeoutMs = 120_000): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString("utf8")));
    child.stderr.on("data", (d: Buffer) => (out += d.toString("utf8")));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolvePromise(out);
      else reject(new Error(`${cmd} ${args.join(" ")} failed (${signal ?? `exit code ${code}`}):\n${out.trim().split("\n").slice(-15).join("\n")}`));
    });
  });
}

/** The HTTP status of GET / on the gateway, or undefined when nothing answers. */
function gatewayStatus(port: number): Promise<number | undefined> {
  return new Promise((resolvePromise) => {
    const req = request({ host: "127.0.0.1", port, path: "/", method: "GET", timeout: 2000 }, (res) => {
      res.resume();
      resolvePromise(res.statusCode);
    });
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolvePromise(undefined));
    req.end();
  });
}

function ceph(conf: string, binaries: Record<string, string>) {
  return (tool: string, args: string[], timeoutMs?: number) => run(binaries[tool] ?? tool, ["-c", conf, ...args], timeoutMs);
}

function config(o: { fsid: string; dir: string; monPort: number; rgwPort: number; blockBytes: number }): string {
  const d = o.dir;
  return `[global]
fsid = ${o.fsid}
mon host = v2:127.0.0.1:${o.monPort}
mon initial members = a
public addr = 127.0.0.1
ms bind msgr1 = false
ms bind ipv6 = false
auth allow insecure global id reclaim = false
pid file = ${d}/run/$name.pid
admin socket = ${d}/run/$name.asok
run dir = ${d}/run
log file = ${d}/logs/$name.log
crash dir = ${d}/crash
keyring = ${d}/keyring
osd pool default size = 1
osd pool default min size = 1
mon allow pool size one = true
mon warn on pool no redundancy = false
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon max pg per osd = 1000
osd crush chooseleaf type = 0
paxos propose interval = 0.05
mon data avail warn = 1
mon data avail crit = 0
osd objectstore = bluestore
bluestore block create = true
bluestore block size = ${o.blockBytes}
osd memory target = ${GiB}
osd max object name len = 460
osd max object namespace len = 64

[mon]
mon data = ${d}/mon/$name

[osd]
osd data = ${d}/osd/$name

[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:${o.rgwPort}
rgw data = ${d}/rgw
rgw gc obj min wait = 30
rgw enable usage log = false
`;
}

/**
 * Starts Ceph's monitor, one OSD and the RADOS Gateway under `dataDir` (installing Debian's
 * packages first when they are missing: root or `sudo -n`), makes an S3 user and answers its
 * endpoint and keys. Each call is a cluster of its own: a new data folder content, new ports.
 */
export async function startObjectStore(opts: ObjectStoreOptions): Promise<ObjectStore> {
  const log = opts.log ?? ((l: string) => console.error(l));
  const timeoutMs = opts.readyTimeoutMs ?? 120_000;
  const dir = resolve(opts.dataDir);
  const conf = join(dir, "ceph.conf");
  if (join(dir, "run", "client.rgw.asok").length > 107) throw new Error(`the object store's data folder ${dir} is too long a path for its sockets`);

  const find = () => Object.fromEntries(["ceph-mon", "ceph-osd", "radosgw", "ceph", "monmaptool", "radosgw-admin", "ceph-authtool"].map((t) => [t, findInPath(t)]));
  let binaries = find();
  if (Object.values(binaries).some((b) => b === undefined)) {
    await ensureDebianPackages(CEPH_PACKAGES, log);
    binaries = find();
  }
  const missing = Object.entries(binaries).filter(([, b]) => b === undefined).map(([t]) => t);
  if (missing.length > 0) throw new Error(`the object store needs ${missing.join(", ")}: install the Debian packages ${CEPH_PACKAGES.join(" ")}`);
  const bins = binaries as Record<string, string>;
  const tool = ceph(conf, bins);

  mkdirSync(dir, { recursive: true });
  const lock = acquireLock(dir, "object-store.lock");
  const pidFile = (d: Daemon) => join(dir, "run", `${CEPH_NAME[d]}.pid`);
  const running = (d: Daemon): number | undefined => {
    const pid = readPidFile(pidFile(d));
    return pid !== undefined && pidAlive(pid) && (procCmdline(pid) ?? "").includes(conf) ? pid : undefined;
  };
  const reaper = processReaper(join(dir, "reaper.log"));
  const reaperKey = (d: Daemon) => `${d} of ${dir}`;

  const killNow = (d: Daemon) => {
    const pid = running(d);
    if (pid !== undefined) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        /* gone */
      }
    }
  };
  const stopDaemon = async (d: Daemon) => {
    reaper.forget(reaperKey(d));
    const pid = running(d);
    if (pid === undefined) return;
    // A paused gateway (pauseGateway) hears no SIGTERM until it runs again.
    try {
      process.kill(pid, "SIGCONT");
    } catch {
      /* gone */
    }
    for (const [signal, waitMs] of STOP_STEPS) {
      try {
        process.kill(pid, signal);
      } catch {
        break;
      }
      const deadline = Date.now() + waitMs;
      while (pidAlive(pid) && Date.now() < deadline) await sleep(50);
      if (!pidAlive(pid)) break;
    }
    while (pidAlive(pid)) await sleep(50);
    rmSync(pidFile(d), { force: true });
  };
  // Left by a run of this data folder that died with its reaper: stopped before anything else.
  for (const d of DAEMONS) await stopDaemon(d);

  const cleanupSync = () => {
    for (const d of [...DAEMONS].reverse()) killNow(d);
    rmSync(lock, { force: true });
  };
  registerCleanup(cleanupSync);
  const reserved: number[] = [];
  const daemonArgs = (d: Daemon): [string, string[]] =>
    d === "mon" ? [bins["ceph-mon"]!, ["-c", conf, "-i", "a"]] : d === "osd" ? [bins["ceph-osd"]!, ["-c", conf, "-i", "0"]] : [bins.radosgw!, ["-c", conf, "-n", "client.rgw"]];
  /** Starts a daemon (it forks into the background once set up) and puts it on the reaper's list. */
  const startDaemon = async (d: Daemon) => {
    const [cmd, args] = daemonArgs(d);
    await run(cmd, args, timeoutMs).catch((err: Error) => {
      throw new Error(`${err.message}\n${tailOf(join(dir, "logs", `${CEPH_NAME[d]}.log`), 20)}`);
    });
    const deadline = Date.now() + 10_000;
    let pid = running(d);
    while (pid === undefined && Date.now() < deadline) {
      await sleep(50);
      pid = running(d);
    }
    if (pid === undefined) throw new Error(`${CEPH_NAME[d]} did not stay up:\n${tailOf(join(dir, "logs", `${CEPH_NAME[d]}.log`), 20)}`);
    reaper.watch(reaperKey(d), { pid, stage: d === "rgw" ? 1 : d === "osd" ? 2 : 3, steps: STOP_STEPS });
  };
  const waitGateway = async (port: number) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const status = await gatewayStatus(port);
      if (status !== undefined && status < 500) return;
      if (running("rgw") === undefined) throw new Error(`the RADOS Gateway exited:\n${tailOf(join(dir, "logs", "client.rgw.log"), 20)}`);
      if (Date.now() > deadline) throw new Error(`the RADOS Gateway on 127.0.0.1:${port} did not answer within ${timeoutMs / 1000} s:\n${tailOf(join(dir, "logs", "client.rgw.log"), 20)}`);
      await sleep(100);
    }
  };
  const stopAll = async () => {
    await stopDaemon("rgw");
    await stopDaemon("osd");
    await stopDaemon("mon");
    await reaper.idle();
    for (const p of reserved) releasePort(p);
    rmSync(lock, { force: true });
    unregisterCleanup(cleanupSync);
  };

  const started = Date.now();
  try {
    // A cluster of its own each time: what a previous run left is cleared (the lock is ours).
    for (const name of readdirSync(dir)) if (name !== "object-store.lock" && name !== "reaper.log") rmSync(join(dir, name), { recursive: true, force: true });
    for (const sub of ["run", "logs", "crash", "mon/mon.a", "osd/osd.0", "rgw"]) mkdirSync(join(dir, sub), { recursive: true });
    const monPort = await reservePort();
    const rgwPort = await reservePort();
    reserved.push(monPort, rgwPort);
    const fsid = randomUUID();
    writeFileSync(conf, config({ fsid, dir, monPort, rgwPort, blockBytes: opts.blockBytes ?? 20 * GiB }));

    // The monitor.
    // cephx, one keyring for every daemon of this folder (made before the monitor, which learns them at --mkfs).
    const keyring = join(dir, "keyring");
    const entities: [string, string[]][] = [
      ["mon.", ["mon", "allow *"]],
      ["client.admin", ["mon", "allow *", "osd", "allow *", "mgr", "allow *"]],
      ["osd.0", ["mon", "allow profile osd", "osd", "allow *", "mgr", "allow profile osd"]],
      ["client.rgw", ["mon", "allow rw", "osd", "allow rwx"]],
    ];
    for (const [i, [name, caps]] of entities.entries()) {
      const capArgs = caps.flatMap((c, j) => (j % 2 === 0 ? ["--cap", c] : [c]));
      await run(bins["ceph-authtool"]!, [...(i === 0 ? ["--create-keyring"] : []), keyring, "--gen-key", "-n", name, ...capArgs]);
    }
    await run(bins.monmaptool!, ["--create", "--fsid", fsid, "--addv", "a", `[v2:127.0.0.1:${monPort}]`, join(dir, "monmap")]);
    await tool("ceph-mon", ["--mkfs", "-i", "a", "--monmap", join(dir, "monmap"), "--keyring", keyring]);
    await startDaemon("mon");

    // One OSD on a sparse block file.
    const osdUuid = randomUUID();
    const id = (await tool("ceph", ["osd", "new", osdUuid], timeoutMs)).trim();
    if (id !== "0") throw new Error(`expected OSD 0, the monitor made OSD ${id}`);
    await tool("ceph-osd", ["-i", "0", "--mkfs", "--osd-uuid", osdUuid], timeoutMs);
    await startDaemon("osd");

    // The gateway: it makes its pools itself on first start.
    await startDaemon("rgw");
    await waitGateway(rgwPort);

    const accessKey = `SVC${randomBytes(8).toString("hex").toUpperCase()}`;
    const secretKey = randomBytes(24).toString("base64url");
    await tool("radosgw-admin", ["user", "create", "--uid=svc", "--display-name=svc tests", `--access-key=${accessKey}`, `--secret-key=${secretKey}`], timeoutMs);
    log(`[object-store] RADOS Gateway ready on http://127.0.0.1:${rgwPort} in ${((Date.now() - started) / 1000).toFixed(1)} s (data ${dir})`);

    let stopping: Promise<void> | undefined;
    const endpoint = `http://127.0.0.1:${rgwPort}`;
    return {
      endpoint,
      region: REGION,
      accessKey,
      secretKey,
      port: rgwPort,
      dataDir: dir,
      async createBucket(name) {
        // radosgw-admin does not make buckets: one signed S3 request does (SigV4 by hand would be
        // long; the SDK is a dependency of the tests that want buckets anyway).
        const { S3Client, CreateBucketCommand } = await import("@aws-sdk/client-s3");
        const client = new S3Client({ endpoint, region: REGION, forcePathStyle: true, credentials: { accessKeyId: accessKey, secretAccessKey: secretKey } });
        try {
          await client.send(new CreateBucketCommand({ Bucket: name })).catch((err: Error) => {
            if (err.name !== "BucketAlreadyOwnedByYou") throw err;
          });
        } finally {
          client.destroy();
        }
      },
      pids() {
        return { mon: running("mon"), osd: running("osd"), rgw: running("rgw") };
      },
      stop() {
        stopping ??= stopAll();
        return stopping;
      },
      async stopGateway() {
        await stopDaemon("rgw");
        log(`[object-store] RADOS Gateway stopped`);
      },
      async startGateway() {
        if (running("rgw") !== undefined) return;
        await startDaemon("rgw");
        await waitGateway(rgwPort);
        log(`[object-store] RADOS Gateway started again on ${endpoint}`);
      },
      pauseGateway() {
        const pid = running("rgw");
        if (pid === undefined) throw new Error("the RADOS Gateway is not running");
        process.kill(pid, "SIGSTOP");
      },
      resumeGateway() {
        const pid = running("rgw");
        if (pid !== undefined) process.kill(pid, "SIGCONT");
      },
    };
  } catch (err) {
    await stopAll().catch(() => {});
    throw err;
  }
}

