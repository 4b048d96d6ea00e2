import { createHash } from "node:crypto";
import { Readable, Transform, pipeline } from "node:stream";
import semver from "semver";
import { ServiceError, conflict, forbidden, invalid, notFound, type Actor } from "@svc/contracts";
import { READ_ONLY, type ArtifactService } from "../../domain/artifact-service.js";
import { lockKey } from "../../store/metadata-store.js";
import { canonicalName, cratePath, indexEntry, maxVersion, readPublishMetadata, type IndexEntry } from "./cargo-index.js";
import type { CargoStore, CargoVersionRow } from "./cargo-store.js";

export interface CargoRegistryDeps {
  store: CargoStore;
  artifacts: Pick<ArtifactService, "publish">;
  readOnly: boolean;
}

/** The largest publish metadata read (crates.io's JSON carries the README: 10 MiB covers the largest). */
export const MAX_METADATA_BYTES = 10 * 1024 * 1024;

/**
 * Reads exactly `n` bytes of a paused stream (what came past them is put back); undefined when it
 * ends first. Whatever is buffered is taken whole (`read()`), never asked for by size: a stream
 * holding less than a size asked for signals `readable` again at once, which would spin without
 * ever letting the rest of the body arrive.
 */
export async function readExactly(body: Readable, n: number): Promise<Buffer | undefined> {
  const parts: Buffer[] = [];
  let have = 0;
  while (have < n) {
    const chunk = body.read() as Buffer | null;
    if (chunk !== null) {
      parts.push(chunk);
      have += chunk.length;
      continue;
    }
    if (body.readableEnded || body.destroyed) break;
    await new Promise<void>((resolve, reject) => {
      const off = () => (body.off("readable", done), body.off("end", done), body.off("close", done), body.off("error", fail));
      const done = () => (off(), resolve());
      const fail = (err: Error) => (off(), reject(err));
      body.on("readable", done).on("end", done).on("close", done).on("error", fail);
    });
  }
  const all = Buffer.concat(parts);
  if (all.length < n) return undefined;
  if (all.length > n) body.unshift(all.subarray(n));
  return all.subarray(0, n);
}

const framing = (what: string) => invalid("body", `${what}: a publish is cargo's framing (a u32 LE length, the JSON metadata, a u32 LE length, the .crate file)`);

/** A .crate file exactly `length` bytes long and gzip-compressed, or the stream fails with why. */
function crateOfLength(length: number): Transform {
  let seen = 0;
  let head = Buffer.alloc(0);
  return new Transform({
    transform(chunk: Buffer, _enc, next) {
      seen += chunk.length;
      if (seen > length) return next(framing(`the body goes on past the .crate file's declared length (${length} bytes)`));
      if (head.length < 2) {
        head = Buffer.concat([head, chunk.subarray(0, 2 - head.length)]);
        if (head.length === 2 && (head[0] !== 0x1f || head[1] !== 0x8b)) return next(invalid("body", "the .crate file is not gzip-compressed (a .crate is a .tar.gz, as cargo package makes it)"));
      }
      next(null, chunk);
    },
    flush(done) {
      done(seen < length ? framing(`the .crate file is shorter (${seen} bytes) than its declared length (${length} bytes)`) : null);
    },
  });
}

/** The error cargo prints for a version published before: versions are immutable, as on crates.io. */
export const alreadyUploaded = (name: string, version: string) => conflict(`crate version \`${name}@${version}\` is already uploaded: a published version cannot be replaced; publish a new version`);

export interface PublishedCrate {
  name: string;
  version: string;
  sha256: string;
}

/** An index file: one JSON line per version (yanked set from its row). */
export function indexFile(rows: readonly CargoVersionRow[]): string {
  return rows.map((r) => `${JSON.stringify({ ...(JSON.parse(r.entry) as IndexEntry), yanked: r.yanked })}\n`).join("");
}

/** A crate as `cargo search` lists it. */
export interface FoundCrate {
  name: string;
  max_version: string;
  description: string | null;
}

/**
 * Cargo's writes (https://doc.rust-lang.org/cargo/reference/registry-web-api.html): publish (the
 * .crate streamed into the store as an artifact, its version row committed with it), yank and
 * owners. A version once published keeps its content.
 */
export function cargoRegistryFactory(deps: CargoRegistryDeps) {
  const { store } = deps;
  const writable = () => {
    if (deps.readOnly) throw forbidden(READ_ONLY);
  };

  /** A crate known here under any spelling, refused when the spelling differs (names are unique without regard to case, - and _). */
  const sameSpelling = (name: string, rows: readonly CargoVersionRow[]) => {
    const spelt = rows[0]?.name;
    if (spelt !== undefined && spelt !== name) throw conflict(`crate \`${name}\` is already published here as \`${spelt}\` (names are unique without regard to case, - and _): use that name`);
  };

  const versionsOf = async (repository: string, name: string) => {
    const rows = await store.versions(repository, canonicalName(name));
    if (rows.length === 0) throw notFound(`no crate \`${name}\` in repository ${repository}`);
    return rows;
  };

  return {
    writable,

    /** `cargo publish`: the request's body as it arrives, in cargo's framing. */
    async publish(repository: string, body: Readable, actor: Actor): Promise<PublishedCrate> {
      writable();
      const lengthOf = async (what: string) => {
        const b = await readExactly(body, 4);
        if (!b) throw framing(`the body ends before ${what}'s length`);
        return b.readUInt32LE(0);
      };
      const jsonLength = await lengthOf("the metadata");
      if (jsonLength > MAX_METADATA_BYTES) throw new ServiceError("payload_too_large", `the publish metadata may be at most ${MAX_METADATA_BYTES} bytes`);
      const json = await readExactly(body, jsonLength);
      if (!json) throw framing("the body ends inside the metadata");
      const meta = readPublishMetadata(json.toString("utf8"));
      const crateLength = await lengthOf("the .crate file");
      const { name, vers } = meta;
      const canonical = canonicalName(name);
      const known = await store.versions(repository, canonical);
      sameSpelling(name, known);
      const versionKey = semver.parse(vers)!.version;
      if (known.some((r) => semver.parse(r.version)?.version === versionKey)) throw alreadyUploaded(name, vers);
      const path = cratePath(name, vers);
      const crate = pipeline(body, crateOfLength(crateLength), () => {});
      const stored = await deps.artifacts.publish({ repository, segments: path.split("/"), path }, crate, "application/gzip", actor, {}, {
        // One publish of a crate at a time: the spelling and version checks below see every other.
        locks: [lockKey("cargo-crate", repository, canonical)],
        run: async (tx, staged) => {
          const now = await store.versions(repository, canonical, tx);
          sameSpelling(name, now);
          const entry = JSON.stringify(indexEntry(meta, staged.sha256));
          if (!(await store.insertVersion(tx, repository, { name, version: vers, versionKey, canonical, path, entry, description: meta.description ?? null }))) throw alreadyUploaded(name, vers);
          // The first publisher owns the crate (`cargo owner --list`).
          if (now.length === 0 && (await store.owners(repository, canonical, tx)).length === 0) await store.addOwners(repository, canonical, [loginOf(actor)], tx);
        },
      });
      return { name, version: vers, sha256: stored.sha256 };
    },

    /** Yanks or unyanks a version; it stays downloadable (a lockfile naming it still builds). */
    async yank(repository: string, name: string, version: string, yanked: boolean): Promise<void> {
      writable();
      const rows = await versionsOf(repository, name);
      if (!(await store.setYanked(repository, canonicalName(rows[0]!.name), version, yanked))) throw notFound(`crate \`${rows[0]!.name}\` has no version ${version} in repository ${repository}`);
    },

    /** A crate's owners, as `GET /api/v1/crates/<name>/owners` lists them. */
    async owners(repository: string, name: string): Promise<string[]> {
      await versionsOf(repository, name);
      return store.owners(repository, canonicalName(name));
    },

    async addOwners(repository: string, name: string, logins: readonly string[]): Promise<string> {
      writable();
      const rows = await versionsOf(repository, name);
      await store.addOwners(repository, canonicalName(name), logins);
      return rows[0]!.name;
    },

    async removeOwners(repository: string, name: string, logins: readonly string[]): Promise<string> {
      writable();
      const rows = await versionsOf(repository, name);
      const canonical = canonicalName(name);
      const now = await store.owners(repository, canonical);
      if (now.every((l) => logins.includes(l))) throw invalid("users", `crate \`${rows[0]!.name}\` would have no owner left: add another owner first`);
      await store.removeOwners(repository, canonical, logins);
      return rows[0]!.name;
    },

    /** `cargo search`: crates whose name contains the query, by name; `total` counts them all. */
    async search(repository: string, query: string, perPage: number): Promise<{ crates: FoundCrate[]; total: number }> {
      const found = await store.search(repository, query);
      const crates = [...found.values()].slice(0, perPage).map((rows) => {
        const max = maxVersion(rows.map((r) => ({ vers: r.version, yanked: r.yanked })))!;
        return { name: rows[0]!.name, max_version: max, description: rows.find((r) => r.version === max)?.description ?? null };
      });
      return { crates, total: found.size };
    },
  };
}
export type CargoRegistry = ReturnType<typeof cargoRegistryFactory>;

/** An owner's login: the principal that published (a key's id, a person's id), as `npm whoami` answers it. */
export const loginOf = (actor: Actor): string => actor.id || actor.kind;

/** The sha256 of an index file's body, as its ETag. */
export const etagOfIndex = (body: string): string => `"${createHash("sha256").update(body).digest("base64url")}"`;
