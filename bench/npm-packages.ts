// The npm packages the npm bench publishes to both registries: a tarball built in memory (a
// ustar archive holding package/package.json and package/index.js, gzipped) and the publish
// document `npm publish` sends, byte for byte the same for the suite and for Verdaccio.
import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import { Agent, request } from "undici";

const agent = new Agent({ connections: 32, keepAliveTimeout: 30_000 });
export const closeNpmAgent = () => agent.close();

/** One ustar header block (512 bytes) for a regular file. */
function tarHeader(name: string, size: number): Buffer {
  const h = Buffer.alloc(512);
  h.write(name, 0, 100, "utf8");
  h.write("0000644\0", 100);
  h.write("0000000\0", 108);
  h.write("0000000\0", 116);
  h.write(size.toString(8).padStart(11, "0") + "\0", 124);
  h.write("00000000000\0", 136);
  h.write("        ", 148);
  h.write("0", 156);
  h.write("ustar\0", 257);
  h.write("00", 263);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(sum.toString(8).padStart(6, "0") + "\0 ", 148);
  return h;
}

/** A plain ustar archive of `files` (name: text), each padded to its block, ended by two empty blocks. */
export function tarOf(files: Record<string, string>): Buffer {
  const parts: Buffer[] = [];
  for (const [name, text] of Object.entries(files)) {
    const body = Buffer.from(text);
    parts.push(tarHeader(name, body.length), body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

function tarball(files: Record<string, string>): Buffer {
  return gzipSync(tarOf(Object.fromEntries(Object.entries(files).map(([name, text]) => [`package/${name}`, text]))));
}

/**
 * Fields that make a version's manifest the size real ones have (a description, keywords,
 * scripts, dependencies): about 2.5 KB each, so 2,000 versions make a document of several MB.
 */
function filler(version: string): Record<string, unknown> {
  const deps: Record<string, string> = {};
  for (let i = 0; i < 30; i++) deps[`bench-dependency-name-${i}`] = `^${i}.${version.split(".")[1]}.0`;
  return {
    description: `A benchmark package, version ${version}: a sentence about what it does, as real packages have one.`,
    keywords: Array.from({ length: 30 }, (_, i) => `keyword-${i}`),
    scripts: { test: "node test.js", build: "tsc -p tsconfig.json", lint: "eslint ." },
    repository: { type: "git", url: "git+https://example.com/bench/bench.git" },
    author: { name: "Bench Author", email: "bench@example.com" },
    devDependencies: deps,
  };
}

export interface PublishDoc {
  name: string;
  version: string;
  body: string;
}

/** The document `npm publish` sends for `name@version`; `dependencies` are real ones (installed). */
export function publishDoc(registry: string, name: string, version: string, opts: { big?: boolean; dependencies?: Record<string, string> } = {}): PublishDoc {
  const pkgJson = { name, version, main: "index.js", license: "MIT", ...(opts.dependencies ? { dependencies: opts.dependencies } : {}) };
  const tgz = tarball({ "package.json": JSON.stringify(pkgJson, null, 2), "index.js": `module.exports = ${JSON.stringify(`${name}@${version}`)};\n` });
  const file = `${name.slice(name.lastIndexOf("/") + 1)}-${version}.tgz`;
  const manifest = {
    ...pkgJson,
    ...(opts.big ? filler(version) : {}),
    _id: `${name}@${version}`,
    readme: `# ${name}\n`,
    _nodeVersion: process.versions.node,
    _npmVersion: "11.0.0",
    dist: {
      integrity: `sha512-${createHash("sha512").update(tgz).digest("base64")}`,
      shasum: createHash("sha1").update(tgz).digest("hex"),
      tarball: `${registry}${name}/-/${file}`,
    },
  };
  const doc = {
    _id: name,
    name,
    description: "",
    "dist-tags": { latest: version },
    versions: { [version]: manifest },
    access: null,
    _attachments: { [file]: { content_type: "application/octet-stream", data: tgz.toString("base64"), length: tgz.length } },
  };
  return { name, version, body: JSON.stringify(doc) };
}

/** PUT of a publish document, as npm sends it; throws with the registry's answer on a refusal. */
export async function publish(registry: string, token: string, doc: PublishDoc): Promise<void> {
  const res = await request(`${registry}${doc.name.replace("/", "%2f")}`, {
    method: "PUT",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "npm-command": "publish" },
    body: doc.body,
    dispatcher: agent,
  });
  const text = await res.body.text();
  if (res.statusCode !== 200 && res.statusCode !== 201) throw new Error(`publish ${doc.name}@${doc.version} answered ${res.statusCode}: ${text.slice(0, 300)}`);
}

/** A GET of `url` with npm's headers, timed from the request to the last byte; the body's size. */
export async function timedGet(url: string, headers: Record<string, string>): Promise<{ ms: number; bytes: number; status: number }> {
  const t0 = performance.now();
  const res = await request(url, { headers, dispatcher: agent });
  let bytes = 0;
  for await (const chunk of res.body) bytes += (chunk as Buffer).length;
  return { ms: performance.now() - t0, bytes, status: res.statusCode };
}
