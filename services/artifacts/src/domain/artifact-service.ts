import { createHash } from "node:crypto";
import type { Readable } from "node:stream";
import type { BlobStore, StagedBlob } from "@svc/blobs";
import { conflict, forbidden, notFound, type PackageCoordinates, type Actor, type ArtifactEvent, type ArtifactFinding, type ArtifactHeld, type ArtifactPublished, type ArtifactReleased, type ArtifactRemoved, type Principal } from "@svc/contracts";
import { newEventId } from "@svc/kit";
import { lockKey, parentsOf, type ArtifactRecord, type Db, type MetadataStore, type Rows } from "../store/metadata-store.js";
import type { OutboxStore } from "../store/outbox-store.js";
import { quotaRefusalOf, type Quota } from "./quota.js";
import { checkPreconditions, digestCheck, etagOf, type DeclaredDigests, type Preconditions } from "./upload-checks.js";

/** Sent with a transaction's BEGIN: its writes are counted in their repositories' usage, never refused for a quota. */
const QUOTA_NOT_ENFORCED = "select set_config('svc.quota', 'off', true)";

/** Bodies in memory up to this size are hashed before the transaction begins (publish). */
const EARLY_DIGEST_BYTES = 1024 * 1024;

export interface ArtifactServiceDeps {
  /** Where content is: the path index (metadata) says which path holds which digest. */
  blobs: Pick<BlobStore, "readOnly" | "stage" | "commit" | "discard" | "head" | "get" | "delete">;
  metadata: Pick<MetadataStore, "transaction" | "lockedTransaction" | "lockBlob" | "find" | "findStatement" | "clashStatement" | "clashOf" | "recordOf" | "recordStatement" | "correctArtifact" | "forgetArtifact" | "setHold" | "referenced" | "holding">;
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
  indexing?: (tx: Db, a: Address, at: Date) => Promise<boolean | void>;
  /** A package format's step when a file's hold changes (its documents stop or start listing the version), in that transaction. */
  holding?: (tx: Db, a: Address) => Promise<void>;
  /** Whether a repository's format has an `indexing` step at all (a backfill of one without it does nothing). */
  indexes?: (repository: string) => boolean;
  /** The screening gate (gate/): asked before a publish lands, told what it stored. */
  gate?: PublishGate;
  /** Storage quotas' early check (domain/quota.ts); the commit's check is Postgres's, whatever this is. */
  quota?: Pick<Quota, "check">;
}

/** What a publish asks of the screening gate (gate/gate-service.ts). */
export interface PublishGate {
  /** BLOCK: refused with `reason`; HOLD: stored held for `reason`; WARN: stored; undefined: nothing matched. */
  screen(repository: string, path: string): Promise<{ action: "BLOCK" | "HOLD" | "WARN"; reason: string } | undefined>;
  /** After the publish committed: records its findings, answering those new (each then published as `artifact.finding`). */
  found(a: Address, verdict: NonNullable<Awaited<ReturnType<PublishGate["screen"]>>>): Promise<Finding[]>;
  /** A publish refused (BLOCK): kept in the refusal log with who tried. */
  refused(a: Address, verdict: NonNullable<Awaited<ReturnType<PublishGate["screen"]>>>, actor: Actor): Promise<void>;
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

/**
 * Content the blob store holds already (an OCI upload's one chunk, whose digest is the blob's):
 * published without its bytes being read or written again. `gone` is what the publish throws
 * when the blob is no longer there once its lock is held (a reclaim took it meanwhile).
 */
export interface StoredContent {
  stored: { sha256: string; size: number };
  gone: () => Error;
}

const isStored = (source: Readable | Buffer | StoredContent): source is StoredContent => !Buffer.isBuffer(source) && "stored" in source;

export interface Published {
  size: number;
  sha256: string;
  created: boolean;
  /** The ETag a GET now answers. */
  etag: string | undefined;
}

export type IndexOutcome = "created" | "corrected" | "unchanged" | "missing";
export type RetentionOutcome = { removed: true; size: number } | { removed: false; why: "gone" | "held" | "changed" };
export type Finding = ArtifactFinding["finding"];

/** An event's actor from the gateway's principal: a kind and an id, never a secret. */
export function actorOf(p: Principal): Actor {
  return { kind: p.kind, id: p.id };
}

export const READ_ONLY = "this server is read-only (svc.read-only): writes are refused";

/**
 * Every change to an artifact: its index row (the single truth of what a path holds) and an
 * outbox event, made under a per-path lock in one transaction; the event goes to NATS as the
 * caller answers. Bytes are in the blob store, by digest: a publish commits its blob before
 * the row (under the blob's lock, shared), a removal drops the row and leaves the blob to the
 * walker's reclaim, which removes a blob only under its lock taken exclusively and when no row
 * references it. A crash between a blob's commit and its row's leaves a blob nothing
 * references, reclaimed after its grace period; never a row without its blob.
 */
export function artifactServiceFactory(deps: ArtifactServiceDeps) {
  const { blobs, metadata, outbox } = deps;
  /** Removes a blob, under its lock taken exclusively, if no index row references it; its size when it did. */
  const dropUnreferenced = (sha256: string, olderThanMs = 0) =>
    metadata.transaction(async (tx) => {
      await metadata.lockBlob(tx, sha256, "exclusive");
      if (await metadata.referenced(sha256, tx)) return undefined;
      const blob = await blobs.head(sha256);
      if (!blob || Date.now() - blob.modified.getTime() < olderThanMs) return undefined;
      return (await blobs.delete(sha256)) ? blob.size : undefined;
    });
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
    fn: (tx: Db, first: Rows[]) => Promise<{ event: T; result: R; last?: string }>,
    opts: { closed?: () => R; locks?: string[]; sharedLocks?: string[]; withBegin?: string[] } = {},
  ): Promise<R> => {
    const { closed } = opts;
    const { event, result } = await metadata
      .lockedTransaction<{ event: T | undefined; result: R; last?: string }>(a.repository, a.path, fn, {
        // fn's own last write, then the event's outbox row, sent with COMMIT.
        lastStatement: (out) => [out.last, out.event ? outbox.addStatement(out.event) : undefined].filter((x) => x !== undefined).join("; ") || undefined,
        moreLocks: opts.locks,
        sharedLocks: opts.sharedLocks,
        withBegin: opts.withBegin,
        ...(closed ? { whenClosed: () => ({ event: undefined, result: closed() }) } : {}),
      })
      .catch((err: unknown) => {
        // The path index's usage trigger refused a write over the repository's quota (domain/quota.ts): rolled back.
        throw quotaRefusalOf(err) ?? err;
      });
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

  /**
   * After a removal committed: its content's blob goes when no other path holds it (as a
   * reclaim with no grace period, under the blob's lock: a publish of the same content that
   * committed it meanwhile finds it gone under that lock and commits it again from its staged
   * copy). A failure leaves it to the walker's reclaim.
   */
  const releaseBlob = async (sha256: string | undefined) => {
    if (sha256 !== undefined) await dropUnreferenced(sha256).catch(() => undefined);
  };

  /**
   * Repair: drops the index row of a path whose blob is missing (deleted behind the service's
   * back, or found corrupt) and publishes its removal: no client is offered a path whose bytes
   * are gone.
   */
  const forget = async (a: Address, actor: Actor): Promise<boolean> => {
    if (blobs.readOnly) throw forbidden(READ_ONLY);
    return change(a, async (tx) => {
      const row = await metadata.find(a.repository, a.path, tx);
      if (!row || (await blobs.head(row.sha256))) return { event: undefined, result: false };
      await forgetRow(tx, a);
      const event: ArtifactRemoved = { ...base(a, row.size, row.sha256, actor), kind: "artifact.removed", reason: "request" };
      return { event, result: true };
    });
  };

  /** Reports a finding (malware, vulnerability, ...) about an artifact; publishes `artifact.finding`. */
  const recordFinding = async (a: Address, finding: Finding, actor: Actor): Promise<ArtifactFinding> =>
    change(a, async (tx) => {
      const row = await metadata.find(a.repository, a.path, tx);
      if (!row) throw notFound(`no artifact at ${a.repository}/${a.path}`);
      const event: ArtifactFinding = { ...base(a, row.size, row.sha256, actor), kind: "artifact.finding", finding };
      return { event, result: event };
    });

  /** ArtifactService.removeIf; retention's removal is one (the walk's digest and publish time still the row's). */
  const removeIf = async (a: Address, still: (tx: Db, row: ArtifactRecord) => Promise<boolean>, reason: "retention" | "collected", actor: Actor): Promise<RetentionOutcome> => {
    if (blobs.readOnly) throw forbidden(READ_ONLY);
    let gone: string | undefined;
    const out = await change(a, async (tx): Promise<{ event: ArtifactRemoved | undefined; result: RetentionOutcome }> => {
      const row = await metadata.find(a.repository, a.path, tx);
      if (!row) return { event: undefined, result: { removed: false, why: "gone" } };
      if (row.heldReason !== null) return { event: undefined, result: { removed: false, why: "held" } };
      if (!(await still(tx, row))) return { event: undefined, result: { removed: false, why: "changed" } };
      await forgetRow(tx, a);
      gone = row.sha256;
      const event: ArtifactRemoved = { ...base(a, row.size, row.sha256, actor), kind: "artifact.removed", reason };
      return { event, result: { removed: true, size: row.size } };
    });
    await releaseBlob(gone);
    return out;
  };

  return {
    /**
     * PUT: stores the upload and publishes `artifact.published`. A declared digest that does not
     * match (400) or a failed precondition (412) stores nothing and leaves the old content.
     * `alongside` runs first in the same transaction, under the path's lock; what it throws
     * stores nothing either. `a` may be a LateDestination, asked once the content is staged.
     */
    async publish(a: Address | LateDestination, source: Readable | Buffer | StoredContent, contentType: string | null, actor: Actor, checks: PublishChecks = {}, alongside?: Alongside): Promise<Published> {
      const digests = digestCheck(checks.digests ?? {});
      const already = isStored(source) ? source : undefined;
      let staged: StagedBlob | undefined;
      // Whether this publish made the blob (it did not exist): a refused publish takes it out again.
      let made = false;
      let stored = false;
      let replaced: string | undefined;
      // Staged, checked against the declared digests and committed as the blob of its digest:
      // none of it needs the path's lock (content is stored by digest and shows nowhere until
      // the index row commits). A body in memory is made ready while the first message takes
      // the locks; a stream before (an upload may take minutes, and no lock or connection
      // waits on it).
      const ready = (async () => {
        if (already) {
          // Stored already: nothing to stage, commit or discard. Only its SHA-256 is known.
          if (digests.through.length > 0) throw new Error("content stored already can be checked against its SHA-256 only");
          digests.verify(already.stored.sha256);
          return { name: "", ...already.stored };
        }
        const s = await blobs.stage(source as Readable | Buffer, { through: digests.through });
        staged = s;
        digests.verify(s.sha256);
        made = (await blobs.commit(s)).created;
        return s;
      })();
      const late = typeof a === "function";
      // Awaited in the transaction when in memory; never unhandled before that.
      if (Buffer.isBuffer(source) && !late) ready.catch(() => {});
      // A small body in memory is hashed at once (microseconds), so the blob's lock goes in the
      // first message with the path's instead of a round trip of its own inside the transaction.
      const early = Buffer.isBuffer(source) && !late && source.length <= EARLY_DIGEST_BYTES ? createHash("sha256").update(source).digest("hex") : undefined;
      try {
        if (!Buffer.isBuffer(source) || late) await ready;
        const to = late ? await ready.then(({ size, sha256 }) => a({ size, sha256 })) : { address: a, alongside };
        // The screening gate, before anything lands: a refusal stores nothing (the blob this
        // publish made goes below), a hold stores the file held in the same transaction.
        const verdict = await deps.gate?.screen(to.address.repository, to.address.path);
        if (verdict?.action === "BLOCK") {
          await deps.gate!.refused(to.address, verdict, actor);
          throw forbidden(verdict.reason);
        }
        const held = verdict?.action === "HOLD" ? verdict.reason : undefined;
        let heldEvent: ArtifactHeld | undefined;
        // The blob's lock, shared, in the first message when its digest is known by then.
        const known = already ? already.stored.sha256 : !Buffer.isBuffer(source) || late ? staged?.sha256 : early;
        const result = await change(
          to.address,
          async (tx, [found = [], clash = [], ...formatRows]) => {
            // A path is a file or a folder of files, never both (a filesystem's rule, which
            // clients and mirrors of the repository rely on).
            const clashes = metadata.clashOf(clash);
            if (clashes.parent) throw conflict("a parent of this path is a file, not a folder");
            if (clashes.folder) throw conflict("this path is a folder of other artifacts");
            const s = await ready;
            if (known !== undefined && known !== s.sha256) throw new Error("the staged content is not the content hashed");
            if (!known) await metadata.lockBlob(tx, s.sha256, "shared");
            // Under the blob's lock no reclaim removes it; one that did since the commit above
            // (the blob had no reference yet) is undone from the staged copy. Asked beside the
            // package format's own rows (an npm version), which commit with the artifact row, or
            // neither does.
            const [present] = await Promise.all([blobs.head(s.sha256), to.alongside?.run(tx, { size: s.size, sha256: s.sha256 }, formatRows)]);
            if (!present) {
              if (already) throw already.gone();
              made = (await blobs.commit(s)).created || made;
            }
            const previous = metadata.recordOf(found);
            if (checks.preconditions) checkPreconditions(checks.preconditions, { sha256: previous?.sha256 });
            const at = new Date();
            const record = metadata.recordStatement({ repository: to.address.repository, path: to.address.path, size: s.size, sha256: s.sha256, contentType, at, heldReason: held ?? previous?.heldReason ?? null });
            const created = previous === undefined;
            if (previous && previous.sha256 !== s.sha256) replaced = previous.sha256;
            const event: ArtifactPublished = { ...base(to.address, s.size, s.sha256, actor, at), kind: "artifact.published", replaced: !created };
            // A hold's event commits with the row it holds (its outbox row sent with the COMMIT too).
            if (held !== undefined && previous?.heldReason !== held) heldEvent = { ...base(to.address, s.size, s.sha256, actor, at), kind: "artifact.held", reason: held };
            const last = heldEvent ? `${record}; ${outbox.addStatement(heldEvent)}` : record;
            return { event, last, result: { size: s.size, sha256: s.sha256, created, etag: etagOf(s.sha256) } };
          },
          {
            locks: to.alongside?.locks,
            // The folders' path locks, shared: a publish at a folder of this path (or a removal
            // there) waits for this one, and this one for it, so the clash check sees it.
            sharedLocks: [...parentsOf(to.address.path).map((p) => lockKey("artifact-path", to.address.repository, p)), ...(known ? [lockKey("blob", known)] : [])],
            withBegin: [metadata.findStatement(to.address.repository, to.address.path), metadata.clashStatement(to.address.repository, to.address.path), ...(to.alongside?.withBegin ?? [])],
            closed: () => {
              // Checked before anything lands: a removal that began meanwhile finds nothing of this upload.
              throw notFound(`no repository named ${to.address.repository}`);
            },
          },
        );
        stored = true;
        if (heldEvent) {
          const e = heldEvent;
          setImmediate(() => void deliver(e));
        }
        // The content this path held before goes when no other path holds it.
        await releaseBlob(replaced);
        if (verdict && deps.gate) for (const f of await deps.gate.found(to.address, verdict)) await recordFinding(to.address, f, actor);
        return result;
      } finally {
        await ready.catch(() => {});
        // A refused publish leaves no content of its own behind: the blob it made goes, as a
        // reclaim takes it (under its lock, only while nothing references it).
        if (!stored && made && staged) await dropUnreferenced(staged.sha256).catch(() => {});
        // The staged copy goes once the row is committed, or the publish gave up.
        if (staged) await blobs.discard(staged);
      }
    },

    /**
     * DELETE: removes the artifact's index row and publishes `artifact.removed` (reason
     * "request"). Its blob goes too once no other path holds the same content (released). False
     * when there was nothing at the path.
     */
    async remove(a: Address, actor: Actor): Promise<boolean> {
      if (blobs.readOnly) throw forbidden(READ_ONLY);
      let gone: string | undefined;
      const removed = await change(a, async (tx) => {
        const row = await forgetRow(tx, a);
        if (!row) return { event: undefined, result: false };
        gone = row.sha256;
        const event: ArtifactRemoved = { ...base(a, row.size, row.sha256, actor), kind: "artifact.removed", reason: "request" };
        return { event, result: true };
      });
      await releaseBlob(gone);
      return removed;
    },

    /**
     * Retention: removes an artifact only if it is still the version the walk saw (same digest
     * and publish time) and not held; publishes `artifact.removed` with reason "retention".
     */
    async removeForRetention(a: Address, expect: { sha256: string; updated: number }, actor: Actor): Promise<RetentionOutcome> {
      return removeIf(a, async (_tx, row) => row.sha256 === expect.sha256 && row.updated.getTime() === expect.updated, "retention", actor);
    },

    /**
     * A format's collection (OCI garbage collection and image retention, a walk's step): removes
     * the artifact only if `still` answers true in the removal's transaction, under the path's
     * lock (it takes the row locks its guarantee needs, e.g. the row's own `for update`), and it
     * is not held; publishes `artifact.removed` with `reason`.
     */
    removeIf,

    /**
     * Content found outside a publish (a data folder written before the blob store): makes the
     * path's index row say it holds `found`, dated `found.at` when the row is new. `ensure`
     * makes sure the blob exists; it runs under the blob's lock, which a reclaim takes
     * exclusively. No event: the content did not change, only what the index knows about it.
     * In a repository gone or being removed: "missing".
     */
    async indexFound(a: Address, found: { sha256: string; size: number; at: Date }, ensure: () => Promise<unknown>, opts: { quota?: boolean } = {}): Promise<IndexOutcome> {
      if (blobs.readOnly) throw forbidden(READ_ONLY);
      return change(
        a,
        async (tx): Promise<{ event: undefined; result: IndexOutcome; last?: string }> => {
          await ensure();
          const row = await metadata.find(a.repository, a.path, tx);
          if (!row) {
            await deps.indexing?.(tx, a, found.at);
            const last = metadata.recordStatement({ repository: a.repository, path: a.path, size: found.size, sha256: found.sha256, contentType: null, at: found.at });
            return { event: undefined, last, result: "created" };
          }
          if (row.size === found.size && row.sha256 === found.sha256) return { event: undefined, result: "unchanged" };
          await metadata.correctArtifact({ repository: a.repository, path: a.path, size: found.size, sha256: found.sha256 }, tx);
          await deps.indexing?.(tx, a, found.at);
          return { event: undefined, result: "corrected" };
        },
        // Files already stored are indexed whatever the quota (counted, never refused: store/quota-migrations.ts);
        // with `quota` (a blob mounted into another repository), one over it is refused as a publish would be.
        { closed: () => "missing", sharedLocks: [lockKey("blob", found.sha256)], withBegin: opts.quota ? [] : [QUOTA_NOT_ENFORCED] },
      );
    },

    /**
     * Backfill: for each path of a walk's index page, the repository's format rebuilds its own
     * index rows where they are missing (a Maven file's version rows), under the path's lock.
     * Answers how many paths it did something for.
     */
    async backfill(repository: string, paths: readonly Address[]): Promise<number> {
      if (blobs.readOnly) throw forbidden(READ_ONLY);
      if (!deps.indexing || deps.indexes?.(repository) === false) return 0;
      let filled = 0;
      for (const a of paths) {
        const did = await change(a, async (tx) => {
          const row = await metadata.find(a.repository, a.path, tx);
          return { event: undefined, result: row ? (await deps.indexing!(tx, a, row.updated)) === true : false };
        });
        if (did) filled++;
      }
      return filled;
    },

    forget,

    /**
     * Reclaim: removes each blob that, under its lock (taken exclusively: a publish committing
     * a row that references it holds it shared), no index row references and that is untouched
     * for `olderThanMs` (a publish in progress committed or touched it since).
     */
    async reclaim(digests: readonly string[], olderThanMs: number): Promise<{ sha256: string; size: number }[]> {
      if (blobs.readOnly) throw forbidden(READ_ONLY);
      const removed: { sha256: string; size: number }[] = [];
      for (const sha256 of digests) {
        const gone = await dropUnreferenced(sha256, olderThanMs);
        if (gone !== undefined) removed.push({ sha256, size: gone });
      }
      return removed;
    },

    /**
     * Repair of a blob a walk found not to match its digest: read again; when it is indeed
     * corrupt it is removed and every path that held it forgotten (each with its event).
     */
    async verifyBlob(sha256: string, actor: Actor, addressOf: (repository: string, path: string) => Address | undefined): Promise<{ outcome: "intact" | "corrupt" | "missing"; forgotten: { repository: string; path: string }[]; forgottenCount: number }> {
      if (blobs.readOnly) throw forbidden(READ_ONLY);
      const stream = await blobs.get(sha256);
      if (!stream) return { outcome: "missing", forgotten: [], forgottenCount: 0 };
      const hash = createHash("sha256");
      for await (const chunk of stream) hash.update(chunk as Buffer);
      if (hash.digest("hex") === sha256) return { outcome: "intact", forgotten: [], forgottenCount: 0 };
      // Removed under its lock, so no publish commits a row on the corrupt copy meanwhile (one
      // that waits for the lock finds it gone and commits its own bytes again).
      await metadata.transaction(async (tx) => {
        await metadata.lockBlob(tx, sha256, "exclusive");
        await blobs.delete(sha256);
      });
      const forgotten: { repository: string; path: string }[] = [];
      let count = 0;
      let after: { repository: string; path: string } | undefined;
      for (;;) {
        const page = await metadata.holding(sha256, after, 500);
        for (const p of page) {
          const a = addressOf(p.repository, p.path);
          if (a && (await forget(a, actor))) {
            count++;
            if (forgotten.length < 100) forgotten.push(p);
          }
        }
        if (page.length < 500) break;
        after = page[page.length - 1];
      }
      return { outcome: "corrupt", forgotten, forgottenCount: count };
    },

    /** Holds an artifact (quarantine); publishes `artifact.held`. Undefined when already held for that reason. */
    async hold(a: Address, reason: string, actor: Actor): Promise<ArtifactHeld | undefined> {
      return change(a, async (tx) => {
        const row = await metadata.find(a.repository, a.path, tx);
        if (!row) throw notFound(`no artifact at ${a.repository}/${a.path}`);
        if (row.heldReason === reason) return { event: undefined, result: undefined };
        await metadata.setHold(a.repository, a.path, reason, tx);
        await deps.holding?.(tx, a);
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
        await deps.holding?.(tx, a);
        const event: ArtifactReleased = { ...base(a, row.size, row.sha256, actor), kind: "artifact.released", reason };
        return { event, result: event };
      });
    },

    recordFinding,

    /**
     * Refuses (the 413 of a write over the quota) when `bytes` more would take `repository` over
     * its storage quota; `path`: the file the write would replace (a redeploy counts the
     * difference). For a route about to accept a large body (a PUT's Content-Length, an OCI
     * blob upload's), before it reads it: the commit refuses it anyway, after the upload.
     */
    async checkQuota(repository: string, bytes: number, path?: string): Promise<void> {
      await deps.quota?.check(repository, bytes, path);
    },
  };
}
export type ArtifactService = ReturnType<typeof artifactServiceFactory>;
