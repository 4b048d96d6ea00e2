import { createHash, randomBytes } from "node:crypto";
import { createReadStream, createWriteStream, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statfsSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ensureDebianPackages } from "@svc/devstack";
import { tarOf } from "../bench/npm-packages.js";
import { run, type Run } from "./npm-clients.js";
import { startSuite, type Suite } from "./suite.js";

const OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";
const OCI_INDEX = "application/vnd.oci.image.index.v1+json";
const CONFIG = "application/vnd.oci.image.config.v1+json";
const LAYER = "application/vnd.oci.image.layer.v1.tar+gzip";
const LAYER_TAR = "application/vnd.oci.image.layer.v1.tar";

const sha256 = (b: Buffer | string) => `sha256:${createHash("sha256").update(b).digest("hex")}`;

/** The bytes of each blob of an OCI layout, by digest. */
function layoutBlobs(dir: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const f of readdirSync(join(dir, "blobs", "sha256"))) out.set(`sha256:${f}`, readFileSync(join(dir, "blobs", "sha256", f)));
  return out;
}

/**
 * An OCI layout written by hand (no daemon) holding one multi-arch image: an image manifest per
 * architecture (each its own layer and config) under one image index tagged `tag`.
 */
function multiArchLayout(dir: string, tag: string, arches: readonly string[]) {
  mkdirSync(join(dir, "blobs", "sha256"), { recursive: true });
  const put = (b: Buffer) => {
    const d = sha256(b);
    writeFileSync(join(dir, "blobs", "sha256", d.slice(7)), b);
    return { digest: d, size: b.length };
  };
  const images = arches.map((architecture) => {
    const tar = tarOf({ "arch.txt": `built for ${architecture}\n` });
    const layer = put(gzipSync(tar));
    const config = put(Buffer.from(JSON.stringify({ architecture, os: "linux", config: {}, rootfs: { type: "layers", diff_ids: [sha256(tar)] } })));
    const manifest = put(Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: OCI_MANIFEST, config: { mediaType: CONFIG, ...config }, layers: [{ mediaType: LAYER, ...layer }] })));
    return { architecture, layer, config, manifest };
  });
  const index = put(Buffer.from(JSON.stringify({
    schemaVersion: 2,
    mediaType: OCI_INDEX,
    manifests: images.map((i) => ({ mediaType: OCI_MANIFEST, ...i.manifest, platform: { architecture: i.architecture, os: "linux" } })),
  })));
  writeFileSync(join(dir, "oci-layout"), JSON.stringify({ imageLayoutVersion: "1.0.0" }));
  writeFileSync(join(dir, "index.json"), JSON.stringify({ schemaVersion: 2, manifests: [{ mediaType: OCI_INDEX, ...index, annotations: { "org.opencontainers.image.ref.name": tag } }] }));
  return { images, index };
}

/**
 * The OCI registry with the container clients people build and run images with: Debian's buildah
 * and podman (no daemon, vfs storage in the test's own folder, runc and cgroupfs, never the
 * machine's own containers storage or registries), skopeo for a multi-arch index, and a 500 MB
 * layer streamed through the gateway with the services' memory flat.
 */
describe("the OCI registry with buildah, podman and skopeo", () => {
  let s: Suite;
  let work: string;
  /** podman's runroot and its own state, short (podman refuses a runroot over 50 characters): the test's own too. */
  let runDir: string;
  let writer: string;
  let reader: string;
  let host: string;

  /** The clients' environment: HOME, TMPDIR and the credentials file of the test's own. */
  const env = () => ({
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: join(work, "home"),
    TMPDIR: join(work, "tmp"),
    XDG_RUNTIME_DIR: join(work, "xdg-run"),
    XDG_CONFIG_HOME: join(work, "xdg-config"),
    REGISTRY_AUTH_FILE: join(work, "auth.json"),
    // No machine registries.conf: references are always written in full here.
    CONTAINERS_REGISTRIES_CONF: join(work, "registries.conf"),
  });
  const storage = () => ["--root", join(work, "storage"), "--runroot", join(runDir, "run"), "--storage-driver", "vfs"];
  const buildah = (args: string[], stdin?: string) => client("buildah", [...storage(), ...args], stdin);
  const podman = (args: string[], stdin?: string) =>
    client("podman", [...storage(), "--tmpdir", join(runDir, "libpod"), "--runtime", "runc", "--cgroup-manager", "cgroupfs", "--events-backend", "file", ...args], stdin);
  const skopeo = (args: string[]) => run("skopeo", ["--insecure-policy", ...args], { cwd: work, env: env() });
  const client = (command: string, args: string[], stdin?: string): Promise<Run> => {
    if (stdin === undefined) return run(command, args, { cwd: work, env: env(), timeoutMs: 300_000 });
    // A password on stdin (podman login --password-stdin): the key never appears in a process list.
    return run("sh", ["-c", `printf '%s' "$SECRET" | exec "$@"`, "sh", command, ...args], { cwd: work, env: { ...env(), SECRET: stdin }, timeoutMs: 300_000 });
  };
  const ok = (r: Run) => {
    if (r.code !== 0) throw new Error(`client failed (${r.code}):\n${r.output}`);
    return r;
  };
  const v2 = (method: string, path: string, opts: { key: string; headers?: Record<string, string>; body?: BodyInit } = { key: "" }) =>
    fetch(`${s.gatewayUrl}/v2/${path}`, {
      method,
      headers: { authorization: `Basic ${Buffer.from(`e2e:${opts.key}`).toString("base64")}`, ...opts.headers },
      body: opts.body,
      redirect: "manual",
      duplex: "half",
    } as RequestInit);

  beforeAll(async () => {
    [s] = await Promise.all([startSuite(), ensureDebianPackages(["buildah", "podman", "runc", "skopeo"])]);
    work = mkdtempSync(join(inject("dataDir"), "oci-clients-"));
    runDir = mkdtempSync(join(tmpdir(), "oci-"));
    for (const d of ["home", "tmp", "xdg-run", "xdg-config"]) mkdirSync(join(work, d), { recursive: true });
    writeFileSync(join(work, "auth.json"), JSON.stringify({ auths: {} }));
    writeFileSync(join(work, "registries.conf"), 'unqualified-search-registries = []\nshort-name-mode = "enforcing"\n');
    await s.createRepository("oci", "oci");
    writer = (await s.mint({ label: "pusher", grants: [{ scope: "oci", tokens: ["deploy"] }] })).key;
    reader = (await s.mint({ label: "puller", grants: [{ scope: "oci", tokens: ["read-only"] }] })).key;
    host = new URL(s.gatewayUrl).host;
  }, 900_000);
  afterAll(async () => {
    await s?.stop();
    // The clients' storage (vfs copies of every layer) is the test's alone.
    if (work) rmSync(work, { recursive: true, force: true });
    if (runDir) rmSync(runDir, { recursive: true, force: true });
  });

  /** An image built from scratch by buildah: one file of `payload` at /data/payload.bin, a label and an environment. */
  const buildFromScratch = async (name: string, payload: Buffer) => {
    const file = join(work, `${name.replaceAll("/", "-")}.bin`);
    writeFileSync(file, payload);
    const container = ok(await buildah(["from", "scratch"])).stdout.trim();
    ok(await buildah(["copy", container, file, "/data/payload.bin"]));
    ok(await buildah(["config", "--label", "org.example.suite=oci-clients", "--env", "GREETING=hello", "--arch", "amd64", "--os", "linux", container]));
    ok(await buildah(["commit", container, `localhost/${name}`]));
    ok(await buildah(["rm", container]));
  };

  /** A file of an image in the clients' storage, read through podman's mount of it. */
  const fileOf = async (image: string, path: string) => {
    const dir = ok(await podman(["image", "mount", image])).stdout.trim();
    try {
      return readFileSync(join(dir, path));
    } finally {
      ok(await podman(["image", "unmount", image]));
    }
  };

  it("buildah builds an image from scratch and pushes it with a minted key; podman logs in and pulls it back, the file byte for byte", async () => {
    const payload = randomBytes(64 * 1024);
    await buildFromScratch("team/built:1.0", payload);
    ok(await buildah(["push", "--tls-verify=false", "--creds", `buildah:${writer}`, "localhost/team/built:1.0", `docker://${host}/oci/team/built:1.0`]));

    // The registry holds it: its tag is listed and its manifest names one layer.
    const tags = await v2("GET", "oci/team/built/tags/list", { key: reader });
    expect(await tags.json()).toEqual({ name: "oci/team/built", tags: ["1.0"] });

    const login = await podman(["login", "--tls-verify=false", "--username", "podman", "--password-stdin", host], reader);
    expect(ok(login).output).toMatch(/Login Succeeded/);
    const ref = `${host}/oci/team/built:1.0`;
    ok(await podman(["pull", "--tls-verify=false", ref]));
    const [inspect] = JSON.parse(ok(await podman(["image", "inspect", ref])).stdout) as { Architecture: string; Config: { Env: string[] }; Labels: Record<string, string>; RepoDigests: string[] }[];
    expect(inspect!.Architecture).toBe("amd64");
    expect(inspect!.Config.Env).toContain("GREETING=hello");
    expect(inspect!.Labels["org.example.suite"]).toBe("oci-clients");
    // The digest podman pulled is the one the registry answers for the tag.
    const head = await v2("HEAD", "oci/team/built/manifests/1.0", { key: reader, headers: { accept: OCI_MANIFEST } });
    expect(head.status).toBe(200);
    expect(inspect!.RepoDigests).toContain(`${host}/oci/team/built@${head.headers.get("docker-content-digest")}`);
    expect((await fileOf(ref, "data/payload.bin")).equals(payload)).toBe(true);
  }, 600_000);

  it("podman logs in with a writer's key, pushes an image and pulls it back into a fresh storage the same", async () => {
    const payload = randomBytes(32 * 1024);
    await buildFromScratch("team/pushed:2.0", payload);
    ok(await podman(["login", "--tls-verify=false", "--username", "podman", "--password-stdin", host], writer));
    const ref = `${host}/oci/team/pushed:2.0`;
    ok(await podman(["push", "--tls-verify=false", "localhost/team/pushed:2.0", `docker://${ref}`]));
    // Forget the local copies, so the pull below has only the registry to take it from.
    ok(await podman(["rmi", "localhost/team/pushed:2.0"]));
    expect((await podman(["image", "exists", ref])).code).not.toBe(0);
    ok(await podman(["pull", "--tls-verify=false", ref]));
    expect((await fileOf(ref, "data/payload.bin")).equals(payload)).toBe(true);
    const digest = (await v2("HEAD", "oci/team/pushed/manifests/2.0", { key: reader, headers: { accept: OCI_MANIFEST } })).headers.get("docker-content-digest");
    const [inspect] = JSON.parse(ok(await podman(["image", "inspect", ref])).stdout) as { Digest: string }[];
    expect(inspect!.Digest).toBe(digest);
    ok(await podman(["logout", host]));
  }, 600_000);

  it("a key without write is refused the push by buildah and by podman, with a message the client shows", async () => {
    await buildFromScratch("team/refused:1.0", randomBytes(1024));
    const byBuildah = await buildah(["push", "--tls-verify=false", "--creds", `buildah:${reader}`, "localhost/team/refused:1.0", `docker://${host}/oci/team/refused:1.0`]);
    expect(byBuildah.code).not.toBe(0);
    // The client's own words, then the registry's: the right the key lacks (no new token would help).
    expect(byBuildah.output).toMatch(/denied: this key does not hold repository:write on oci/);
    ok(await podman(["login", "--tls-verify=false", "--username", "podman", "--password-stdin", host], reader));
    const byPodman = await podman(["push", "--tls-verify=false", "localhost/team/refused:1.0", `docker://${host}/oci/team/refused:1.0`]);
    expect(byPodman.code).not.toBe(0);
    expect(byPodman.output).toMatch(/denied: this key does not hold repository:write on oci/);
    // Nothing of it was kept.
    const tags = await v2("GET", "oci/team/refused/tags/list", { key: reader });
    expect(tags.status).toBe(404);
    // A password that is no key at all is refused at login.
    const wrong = await podman(["login", "--tls-verify=false", "--username", "podman", "--password-stdin", host], "not-a-key");
    expect(wrong.code).not.toBe(0);
    expect(wrong.output).toMatch(/invalid username\/password/);
  }, 600_000);

  it("a multi-arch index pushed with skopeo --all: pulled whole, shown raw, and one platform pulled alone", async () => {
    const src = join(work, "multi-src");
    const image = multiArchLayout(src, "1.0", ["amd64", "arm64"]);
    const ref = `docker://${host}/oci/team/multi:1.0`;
    ok(await skopeo(["copy", "--all", "--dest-tls-verify=false", "--dest-creds", `skopeo:${writer}`, `oci:${src}:1.0`, ref]));

    // The index as stored: the same bytes, both platforms.
    const raw = ok(await skopeo(["inspect", "--raw", "--tls-verify=false", "--creds", `skopeo:${reader}`, ref])).stdout;
    expect(sha256(Buffer.from(raw))).toBe(image.index.digest);
    const index = JSON.parse(raw) as { mediaType: string; manifests: { digest: string; platform: { architecture: string } }[] };
    expect(index.mediaType).toBe(OCI_INDEX);
    expect(index.manifests.map((m) => [m.platform.architecture, m.digest])).toEqual(image.images.map((i) => [i.architecture, i.manifest.digest]));

    // Pulled whole: every blob of both images, byte for byte.
    const back = join(work, "multi-back");
    ok(await skopeo(["copy", "--all", "--src-tls-verify=false", "--src-creds", `skopeo:${reader}`, ref, `oci:${back}:1.0`]));
    const pushed = layoutBlobs(src);
    const pulled = layoutBlobs(back);
    expect([...pulled.keys()].sort()).toEqual([...pushed.keys()].sort());
    for (const [d, bytes] of pushed) expect(pulled.get(d)!.equals(bytes)).toBe(true);

    // One platform: the arm64 image alone, and none of the amd64 one's blobs.
    const one = join(work, "multi-arm64");
    ok(await skopeo(["copy", "--override-arch", "arm64", "--override-os", "linux", "--src-tls-verify=false", "--src-creds", `skopeo:${reader}`, ref, `oci:${one}:arm64`]));
    const [arm, amd] = [image.images[1]!, image.images[0]!];
    const named = JSON.parse(readFileSync(join(one, "index.json"), "utf8")) as { manifests: { digest: string }[] };
    expect(named.manifests.map((m) => m.digest)).toEqual([arm.manifest.digest]);
    expect([...layoutBlobs(one).keys()].sort()).toEqual([arm.manifest.digest, arm.config.digest, arm.layer.digest].sort());
    expect(layoutBlobs(one).has(amd.layer.digest)).toBe(false);
    // skopeo inspect names the index's digest and describes the platform asked for.
    const inspected = JSON.parse(ok(await skopeo(["inspect", "--override-arch", "arm64", "--tls-verify=false", "--creds", `skopeo:${reader}`, ref])).stdout) as { Digest: string; Architecture: string; Layers: string[] };
    expect(inspected).toMatchObject({ Digest: image.index.digest, Architecture: "arm64", Layers: [arm.layer.digest] });

    // podman pulls the platform it is asked for out of the index.
    ok(await podman(["login", "--tls-verify=false", "--username", "podman", "--password-stdin", host], reader));
    const name = `${host}/oci/team/multi:1.0`;
    ok(await podman(["pull", "--tls-verify=false", "--arch", "arm64", name]));
    const [pulledArm] = JSON.parse(ok(await podman(["image", "inspect", name])).stdout) as { Architecture: string; RepoDigests: string[] }[];
    expect(pulledArm!.Architecture).toBe("arm64");
    expect(pulledArm!.RepoDigests).toContain(`${host}/oci/team/multi@${arm.manifest.digest}`);
    expect((await fileOf(name, "arch.txt")).toString()).toBe("built for arm64\n");
  }, 600_000);

  /** An image per architecture, built by buildah with a payload of its own: the payloads by architecture. */
  const buildPerArch = async (name: string, added: (image: string) => Promise<unknown>) => {
    const payloads = new Map<string, Buffer>();
    for (const arch of ["amd64", "arm64"]) {
      const payload = randomBytes(4096);
      payloads.set(arch, payload);
      const file = join(work, `${name}-${arch}.bin`);
      writeFileSync(file, payload);
      const container = ok(await buildah(["from", "scratch"])).stdout.trim();
      ok(await buildah(["copy", container, file, "/data/payload.bin"]));
      ok(await buildah(["config", "--arch", arch, "--os", "linux", container]));
      ok(await buildah(["commit", container, `localhost/team/${name}-${arch}:1.0`]));
      ok(await buildah(["rm", container]));
      await added(`containers-storage:localhost/team/${name}-${arch}:1.0`);
    }
    return payloads;
  };

  /** The index at `ref` names both platforms, and podman pulls each with its own payload. */
  const pullEachPlatform = async (ref: string, payloads: Map<string, Buffer>) => {
    const raw = JSON.parse(ok(await skopeo(["inspect", "--raw", "--tls-verify=false", "--creds", `skopeo:${reader}`, `docker://${ref}`])).stdout) as { manifests: { platform: { architecture: string } }[] };
    expect(raw.manifests.map((m) => m.platform.architecture).sort()).toEqual(["amd64", "arm64"]);
    ok(await podman(["login", "--tls-verify=false", "--username", "podman", "--password-stdin", host], reader));
    for (const [arch, payload] of payloads) {
      ok(await podman(["pull", "--tls-verify=false", "--arch", arch, ref]));
      const [inspect] = JSON.parse(ok(await podman(["image", "inspect", ref])).stdout) as { Architecture: string }[];
      expect(inspect!.Architecture).toBe(arch);
      expect((await fileOf(ref, "data/payload.bin")).equals(payload)).toBe(true);
    }
  };

  it("buildah builds an image per architecture under one manifest list and pushes it with --all; podman pulls each platform", async () => {
    const list = "localhost/team/platforms:1.0";
    ok(await buildah(["manifest", "create", list]));
    const payloads = await buildPerArch("platforms", async (image) => ok(await buildah(["manifest", "add", list, image])));
    const ref = `${host}/oci/team/platforms:1.0`;
    ok(await buildah(["manifest", "push", "--all", "--tls-verify=false", "--creds", `buildah:${writer}`, list, `docker://${ref}`]));
    await pullEachPlatform(ref, payloads);
  }, 600_000);

  it("podman manifest create, add and push --all a manifest list with a minted key; podman pulls each platform", async () => {
    const list = "localhost/team/podman-list:1.0";
    ok(await podman(["manifest", "create", list]));
    const payloads = await buildPerArch("podman-list", async (image) => ok(await podman(["manifest", "add", list, image])));
    const ref = `${host}/oci/team/podman-list:1.0`;
    ok(await podman(["login", "--tls-verify=false", "--username", "podman", "--password-stdin", host], writer));
    ok(await podman(["manifest", "push", "--all", "--tls-verify=false", list, `docker://${ref}`]));
    await pullEachPlatform(ref, payloads);
  }, 600_000);

  /** The memory high-water mark of a process (KiB), and its reset to the present size (Linux: clear_refs 5). */
  const peakKiB = (pid: number) => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]);
  const resetPeak = (pid: number) => writeFileSync(`/proc/${pid}/clear_refs`, "5");

  it("a 500 MB layer is pushed and pulled through the gateway from a file: neither the gateway's nor the artifacts service's memory grows by 200 MiB", async () => {
    const size = 500 * 1024 * 1024;
    const dir = mkdtempSync(join(inject("dataDir"), "oci-large-"));
    try {
      // The layer is written once to the client's side and stored once on the server's (same disk), with room to spare.
      const fs = statfsSync(dir);
      const free = fs.bavail * fs.bsize;
      if (free < 4 * size) throw new Error(`the data folder ${dir} has ${Math.floor(free / 2 ** 20)} MiB free: this test needs ${(4 * size) / 2 ** 20} MiB for its 500 MB layer`);

      // Incompressible bytes, written 1 MiB at a time: the test never holds the layer.
      const file = join(dir, "layer.bin");
      const hash = createHash("sha256");
      const out = createWriteStream(file);
      for (let written = 0; written < size; written += 2 ** 20) {
        const chunk = randomBytes(Math.min(2 ** 20, size - written));
        hash.update(chunk);
        if (!out.write(chunk)) await new Promise<void>((r) => out.once("drain", () => r()));
      }
      await new Promise<void>((done, fail) => out.end((err?: Error | null) => (err ? fail(err) : done())));
      const digest = `sha256:${hash.digest("hex")}`;

      // Warmed up first (code loaded and compiled), so what is measured is the transfer itself.
      const warm = Buffer.from("warm");
      expect((await v2("POST", `oci/team/large/blobs/uploads/?digest=${sha256(warm)}`, { key: writer, body: warm })).status).toBe(201);
      const pids = { artifacts: s.pid("artifacts")!, gateway: s.pid("gateway")! };
      for (const pid of Object.values(pids)) resetPeak(pid);
      const before = { artifacts: peakKiB(pids.artifacts), gateway: peakKiB(pids.gateway) };

      // As container clients push a layer: POST a session, one PATCH streaming the file, PUT with the digest.
      const started = await v2("POST", "oci/team/large/blobs/uploads/", { key: writer });
      expect(started.status).toBe(202);
      const patched = await v2("PATCH", new URL(started.headers.get("location")!, s.gatewayUrl).pathname.slice("/v2/".length), {
        key: writer,
        headers: { "content-type": "application/octet-stream" },
        body: Readable.toWeb(createReadStream(file, { highWaterMark: 2 ** 20 })) as ReadableStream,
      });
      expect(patched.status, await patched.text()).toBe(202);
      expect(patched.headers.get("range")).toBe(`0-${size - 1}`);
      const closing = new URL(patched.headers.get("location")!, s.gatewayUrl);
      closing.searchParams.set("digest", digest);
      const put = await v2("PUT", `${closing.pathname.slice("/v2/".length)}${closing.search}`, { key: writer });
      expect(put.status, await put.text()).toBe(201);
      expect(put.headers.get("docker-content-digest")).toBe(digest);

      // An image naming it, so it is a layer as any other.
      const config = Buffer.from(JSON.stringify({ architecture: "amd64", os: "linux", config: {}, rootfs: { type: "layers", diff_ids: [digest] } }));
      expect((await v2("POST", `oci/team/large/blobs/uploads/?digest=${sha256(config)}`, { key: writer, body: config })).status).toBe(201);
      const manifest = JSON.stringify({ schemaVersion: 2, mediaType: OCI_MANIFEST, config: { mediaType: CONFIG, digest: sha256(config), size: config.length }, layers: [{ mediaType: LAYER_TAR, digest, size }] });
      const tagged = await v2("PUT", "oci/team/large/manifests/1.0", { key: writer, body: manifest, headers: { "content-type": OCI_MANIFEST } });
      expect(tagged.status, await tagged.text()).toBe(201);

      // Pulled back whole, hashed as it streams.
      const head = await v2("HEAD", `oci/team/large/blobs/${digest}`, { key: reader });
      expect(head.headers.get("content-length")).toBe(String(size));
      const pulled = await v2("GET", `oci/team/large/blobs/${digest}`, { key: reader });
      expect(pulled.status).toBe(200);
      const down = createHash("sha256");
      let received = 0;
      await pulled.body!.pipeTo(new WritableStream({ write: (part: Uint8Array) => void ((received += part.length), down.update(part)) }));
      expect(received).toBe(size);
      expect(`sha256:${down.digest("hex")}`).toBe(digest);

      const grown = { artifacts: (peakKiB(pids.artifacts) - before.artifacts) / 1024, gateway: (peakKiB(pids.gateway) - before.gateway) / 1024 };
      expect(grown.artifacts, "the artifacts service's memory peak grew by (MiB)").toBeLessThan(200);
      expect(grown.gateway, "the gateway's memory peak grew by (MiB)").toBeLessThan(200);

      // The image removed again: its manifest and its blob.
      expect((await v2("DELETE", `oci/team/large/manifests/${sha256(manifest)}`, { key: writer })).status).toBe(202);
      expect((await v2("DELETE", `oci/team/large/blobs/${digest}`, { key: writer })).status).toBe(202);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 900_000);
});
