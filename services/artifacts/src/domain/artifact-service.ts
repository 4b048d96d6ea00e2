import type { Readable } from "node:stream";
import { forbidden, notFound, type PackageCoordinates, type Actor, type ArtifactEvent, type ArtifactFinding, type ArtifactHeld, type ArtifactPublished, type ArtifactReleased, type ArtifactRemoved, type Principal } from "@svc/contracts";
import { newEventId } from "@svc/kit";
import type { FileIdentity, FileStore, Prepared, Staged } from "../store/file-store.js";
import type { Db, MetadataStore, Rows } from "../store/metadata-store.js";
import type { OutboxStore } from "../store/outbox-store.js";
import { checkPreconditions, digestCheck, etagOf, type DeclaredDigests, type Preconditions } from "./upload-checks.js";

export interface ArtifactServiceDeps {
  files: Pick<FileStore, "readOnly" | "stage" | "prepare" | "place" | "discard" | "remove" | "identity" | "hash" | "releaseBlob">;
  metadata: Pick<MetadataStore, "lockedTransaction" | "find" | "findStatement" | "recordOf" | "recordStatement" | "correctArtifact" | "forgetArtifact" | "setHold">;
  outbox: Pick<OutboxStore, "addStatement">;
  /** Publishes a committed event (not awaited by the caller; a failure leaves it to the outbox relay). */
  deliver: (event: ArtifactEvent) => Promise<unknown>;
  tenant: string;
  /** The package file an artifact is, in a repository with a package format (its events carry it). */
  coordinates?: (repository: string, path: string) => PackageCoordinates | undefined;
  /**
   * A package format's rows about an artifact (an npm version), dropped in the transaction that
   * forgets the artifact, under its path's lock: whatever removes a file (a DELETE, retention,
   * repair, a forced repository removal), no index of the format goes on listing it.
   */
  removing?: (tx: Db, a: Address) => Promise<void>;
  /**
   * The converse: a package format's rows about a file the walker indexes (one a publish that
   * crashed before its commit left), in the transaction that records its artifact row; `at` is
   * the file's modification time, the row's publish time.
   */
  indexing?: (tx: Db, a: Address, at: Date) => Promise<void>;
}

export interface Address {
  repository: string;
  /** Validated segments; joined with "/" they are `path`. */
  segments: string[];
  path: string;
}

/** What a client required of a PUT (domain/upload-checks.ts). */
export interface PublishChecks {
  preconditions?: Preconditions;
  digests?: DeclaredDigests;
}

/**
 * A package format's own step in a publish's transaction: its locks (lockKey(), taken after the
 * path's), statements sent with them (`withBegin`, values quoted in: an npm version's rows) and
 * `run`, which sees the content staged (checked against the declared digests) and the rows those
 * statements answered, in order.
 */
export interface Alongside {
  locks?: string[];
  withBegin?: string[];
  run: (tx: Db, staged: { size: number; sha256: string }, rows: Rows[]) => Promise<void>;
}

/**
 * Where a publish lands, and its format's step, when that is known only once its body has been
 * read: an npm publish document names its version beside the tarball, and may do so after it
 * (yarn 4 sends the tarball first). Called once the content is staged; what it throws stores nothing.
 */
export type LateDestination = (staged: { size: number; sha256: string }) => Promise<{ address: Address; alongside?: Alongside }>;

export interface Published {
  size: number;
  sha256: string;
  created: boolean;
  /** The ETag a GET now answers. */
  etag: string | undefined;
}

export type IndexOutcome = "created" | "corrected" | "unchanged" | "changed" | "missing";
export type RetentionOutcome = { removed: true; size: number } | { removed: false; why: "gone" | "held" | "changed" };
export type Finding = ArtifactFinding["finding"];

/** An event's actor from the gateway's principal: a kind and an id, never a secret. */
export function actorOf(p: Principal): Actor {
  return { kind: p.kind, id: p.id };
}

export const READ_ONLY = "this server is read-only (svc.read-only): writes are refused";

/**
 * Every change to an artifact: the file, its metadata row and an outbox event, made under a
 * per-path lock in one transaction; the event goes to NATS as the caller answers. A
 * crash between the file change and the commit leaves a file the metadata does not match;
 * the walker's repair and backfill jobs reconcile it (through index() and forget()).
 */
export function artifactServiceFactory(deps: ArtifactServiceDeps) {
  const { files, metadata, outbox } = deps;
  const base = (a: Address, size: number, sha256: string, actor: Actor, at = new Date()) => {
    const pkg = deps.coordinates?.(a.repository, a.path);
    return {
      id: newEventId(),
      time: at.toISOString(),
      tenant: deps.tenant,
      repository: a.repository,
      path: a.path,
      size,
      digest: `sha256:${sha256}`,
      actor,
      ...(pkg ? { package: pkg } : {}),
    };
  };
  const deliver = async (event: ArtifactEvent | undefined) => {
    if (!event) return;
    try {
      await deps.deliver(event);
    } catch {
      // The event is in the outbox; the relay publishes it.
    }
  };

  /**
   * A change with its event, under the path's lock, in one transaction; then the event goes out.
   * A change that adds to the repository passes `closed`: it then holds the repository open (a
   * removal waits for it), and in a repository gone or being removed it does nothing and
   * answers what `closed` answers (or throws). `locks`: more advisory locks, after the path's.
   */
  const change = async <T extends ArtifactEvent | undefined, R>(
    a: Address,
    fn: (tx: Db, first: Rows[]) => Promise<{ event: T; result: R; last?: string; durable?: Promise<unknown> }>,
    opts: { closed?: () => R; locks?: string[]; withBegin?: string[] } = {},
  ): Promise<R> => {
    const { closed } = opts;
    const { event, result, durable } = await metadata.lockedTransaction<{ event: T | undefined; result: R; last?: string; durable?: Promise<unknown> }>(a.repository, a.path, fn, {
      // fn's own last write, then the event's outbox row, sent with COMMIT.
      lastStatement: (out) => [out.last, out.event ? outbox.addStatement(out.event) : undefined].filter((x) => x !== undefined).join("; ") || undefined,
      moreLocks: opts.locks,
      withBegin: opts.withBegin,
      ...(closed ? { whenClosed: () => ({ event: undefined, result: closed() }) } : {}),
    });
    // A file's folder entry is flushed while the commit travels; the change is answered once both are on disk.
    await durable;
    // Committed, so the outbox holds it: the answer does not wait for NATS to take the event
    // (the relay sends it again if this attempt fails), nor for the work of sending it, which
    // starts once the answer is on its way.
    if (event) setImmediate(() => void deliver(event));
    return result;
  };
  /** Every removal of an artifact's row goes through here, so a format's rows go with it. */
  const forgetRow = async (tx: Db, a: Address) => {
    const row = await metadata.forgetArtifact(a.repository, a.path, tx);
    await deps.removing?.(tx, a);
    return row;
  };

  return {
    /**
     * PUT: stores the upload and publishes `artifact.published`. A declared digest that does not
     * match (400) or a failed precondition (412) stores nothing and leaves the old content.
     * `alongside` runs first in the same transaction, under the path's lock; what it throws
     * stores nothing either. `a` may be a LateDestination, asked once the content is staged.
     */
    async publish(a: Address | LateDestination, source: Readable | Buffer, contentType: string | null, actor: Actor, checks: PublishChecks = {}, alongside?: Alongside): Promise<Published> {
      const digests = digestCheck(checks.digests ?? {});
      let written: Staged | Prepared | undefined;
      // Staged, checked against the declared digests and linked to its blob: none of it needs
      // the path's lock (files.prepare). A body in memory is made ready while the first message
      // takes the locks; a stream before (an upload may take minutes, and no lock or connection
      // waits on it).
      const ready = (async () => {
        const s = await files.stage(source, digests.through);
        written = s;
        digests.verify(s.sha256);
        written = await files.prepare(s);
        return written;
      })();
      const late = typeof a === "function";
      // Awaited in the transaction when in memory; never unhandled before that.
      if (Buffer.isBuffer(source) && !late) ready.catch(() => {});
      try {
        if (!Buffer.isBuffer(source) || late) await ready;
        const to = late ? await ready.then(({ staged: { size, sha256 } }) => a({ size, sha256 })) : { address: a, alongside };
        return await change(
          to.address,
          async (tx, [found = [], ...formatRows]) => {
            const p = await ready;
            const s = p.staged;
            // A package format's own rows (an npm version) commit with the file, or neither does.
            await to.alongside?.run(tx, { size: s.size, sha256: s.sha256 }, formatRows);
            const previous = metadata.recordOf(found);
            const { created, identity, flushed } = await files.place(p, to.address.repository, to.address.segments, (file) => {
              if (checks.preconditions) checkPreconditions(checks.preconditions, { file, sha256: previous?.sha256 });
            });
            // The content replaced no longer links to its blob from here.
            if (previous && previous.sha256 !== s.sha256) await files.releaseBlob(previous.sha256);
            const at = new Date();
            const last = metadata.recordStatement({ repository: to.address.repository, path: to.address.path, size: s.size, sha256: s.sha256, contentType, at });
            const event: ArtifactPublished = { ...base(to.address, s.size, s.sha256, actor, at), kind: "artifact.published", replaced: !created };
            return { event, last, durable: flushed, result: { size: s.size, sha256: s.sha256, created, etag: etagOf(identity) } };
          },
          {
            locks: to.alongside?.locks,
            withBegin: [metadata.findStatement(to.address.repository, to.address.path), ...(to.alongside?.withBegin ?? [])],
            closed: () => {
              // Checked before anything lands: a removal that began meanwhile finds nothing of this upload.
              throw notFound(`no repository named ${to.address.repository}`);
            },
          },
        );
      } catch (err) {
        // Whatever was staged or made ready and not placed goes (nothing once it is placed).
        await ready.catch(() => {});
        if (written) await files.discard(written);
        throw err;
      }
    },

    /**
     * DELETE: removes the file and its metadata and publishes `artifact.removed` (reason
     * "request"). A path with metadata but no file (a removal a crash interrupted) is finished.
     * False when there was nothing at the path.
     */
    async remove(a: Address, actor: Actor): Promise<boolean> {
      if (files.readOnly) throw forbidden(READ_ONLY);
      return change(a, async (tx) => {
        const row = await metadata.find(a.repository, a.path, tx);
        const file = await files.identity(a.repository, a.segments);
        if (!row && !file) return { event: undefined, result: false };
        // A file nothing indexed yet is read once for the event's digest.
        const { size, sha256 } = row ?? (await files.hash(a.repository, a.segments));
        if (file) await files.remove(a.repository, a.segments, sha256);
        await forgetRow(tx, a);
        const event: ArtifactRemoved = { ...base(a, size, sha256, actor), kind: "artifact.removed", reason: "request" };
        return { event, result: true };
      });
    },

    /**
     * Retention: removes an artifact only if it is still the version the walk saw (same digest
     * and publish time) and not held; publishes `artifact.removed` with reason "retention".
     */
    async removeForRetention(a: Address, expect: { sha256: string; updated: number }, actor: Actor): Promise<RetentionOutcome> {
      if (files.readOnly) throw forbidden(READ_ONLY);
      return change(a, async (tx): Promise<{ event: ArtifactRemoved | undefined; result: RetentionOutcome }> => {
        const row = await metadata.find(a.repository, a.path, tx);
        if (!row) return { event: undefined, result: { removed: false, why: "gone" } };
        if (row.heldReason !== null) return { event: undefined, result: { removed: false, why: "held" } };
        if (row.sha256 !== expect.sha256 || row.updated.getTime() !== expect.updated) return { event: undefined, result: { removed: false, why: "changed" } };
        if (await files.identity(a.repository, a.segments)) await files.remove(a.repository, a.segments, row.sha256);
        await forgetRow(tx, a);
        const event: ArtifactRemoved = { ...base(a, row.size, row.sha256, actor), kind: "artifact.removed", reason: "retention" };
        return { event, result: { removed: true, size: row.size } };
      });
    },

    /**
     * Backfill and repair: records the size and digest a walk measured, if the file is still
     * the one it read (same inode, size and modification time). No event: the content did not
     * change, only what the index knows about it. In a repository being removed: "missing".
     */
    async index(a: Address, observed: FileIdentity, sha256: string): Promise<IndexOutcome> {
      if (files.readOnly) throw forbidden(READ_ONLY);
      return change(a, async (tx): Promise<{ event: undefined; result: IndexOutcome; last?: string }> => {
        const file = await files.identity(a.repository, a.segments);
        if (!file) return { event: undefined, result: "missing" };
        if (file.ino !== observed.ino || file.size !== observed.size || file.mtimeMs !== observed.mtimeMs) return { event: undefined, result: "changed" };
        const row = await metadata.find(a.repository, a.path, tx);
        if (!row) {
          await deps.indexing?.(tx, a, new Date(file.mtimeMs));
          const last = metadata.recordStatement({ repository: a.repository, path: a.path, size: file.size, sha256, contentType: null, at: new Date(file.mtimeMs) });
          return { event: undefined, last, result: "created" };
        }
        if (row.size === file.size && row.sha256 === sha256) return { event: undefined, result: "unchanged" };
        await metadata.correctArtifact({ repository: a.repository, path: a.path, size: file.size, sha256 }, tx);
        await deps.indexing?.(tx, a, new Date(file.mtimeMs));
        return { event: undefined, result: "corrected" };
      }, { closed: () => "missing" });
    },

    /**
     * Repair: drops metadata whose file is gone (a removal a crash interrupted, or a file
     * deleted outside the service) and publishes the removal that never went out.
     */
    async forget(a: Address, actor: Actor): Promise<boolean> {
      if (files.readOnly) throw forbidden(READ_ONLY);
      return change(a, async (tx) => {
        if (await files.identity(a.repository, a.segments)) return { event: undefined, result: false };
        const row = await forgetRow(tx, a);
        if (!row) return { event: undefined, result: false };
        const event: ArtifactRemoved = { ...base(a, row.size, row.sha256, actor), kind: "artifact.removed", reason: "request" };
        return { event, result: true };
      });
    },

    /** Holds an artifact (quarantine); publishes `artifact.held`. Undefined when already held for that reason. */
    async hold(a: Address, reason: string, actor: Actor): Promise<ArtifactHeld | undefined> {
      return change(a, async (tx) => {
        const row = await metadata.find(a.repository, a.path, tx);
        if (!row) throw notFound(`no artifact at ${a.repository}/${a.path}`);
        if (row.heldReason === reason) return { event: undefined, result: undefined };
        await metadata.setHold(a.repository, a.path, reason, tx);
        const event: ArtifactHeld = { ...base(a, row.size, row.sha256, actor), kind: "artifact.held", reason };
        return { event, result: event };
      });
    },

    /** Releases a held artifact; publishes `artifact.released`. Undefined when it was not held. */
    async release(a: Address, reason: string, actor: Actor): Promise<ArtifactReleased | undefined> {
      return change(a, async (tx) => {
        const row = await metadata.find(a.repository, a.path, tx);
        if (!row) throw notFound(`no artifact at ${a.repository}/${a.path}`);
        if (row.heldReason === null) return { event: undefined, result: undefined };
        await metadata.setHold(a.repository, a.path, null, tx);
        const event: ArtifactReleased = { ...base(a, row.size, row.sha256, actor), kind: "artifact.released", reason };
        return { event, result: event };
      });
    },

    /** Reports a finding (malware, vulnerability, ...) about an artifact; publishes `artifact.finding`. */
    async recordFinding(a: Address, finding: Finding, actor: Actor): Promise<ArtifactFinding> {
      return change(a, async (tx) => {
        const row = await metadata.find(a.repository, a.path, tx);
        if (!row) throw notFound(`no artifact at ${a.repository}/${a.path}`);
        const event: ArtifactFinding = { ...base(a, row.size, row.sha256, actor), kind: "artifact.finding", finding };
        return { event, result: event };
      });
    },
  };
}
export type ArtifactService = ReturnType<typeof artifactServiceFactory>;
