import type { FastifyBaseLogger } from "fastify";
import type pg from "pg";
import { escapeIdentifier } from "pg";
import { conflict, invalid, notFound, type Actor } from "@svc/contracts";
import type { Address, ArtifactService, Finding, PublishGate } from "../domain/artifact-service.js";
import type { MetadataStore } from "../store/metadata-store.js";
import { SCHEMA } from "../store/schema.js";
import { ECOSYSTEMS, isEcosystem, packageName, versionRange, type Ecosystem } from "./ecosystems.js";
import { findingsOf, gateFactory, matchesOf, verdictOf, type GateSettings, type Match } from "./gate.js";
import { UUID, type DenyEntry, type FindingRow, type GateStore, type StoredAdvisory } from "./gate-store.js";
import { packageKey, type Advisory } from "./osv-records.js";

/** The gate's own actor on the events it causes (a retroactive hold or finding). */
const GATE_ACTOR: Actor = { kind: "system", id: "screening-gate" };

export interface GateServiceDeps {
  pool: pg.Pool;
  store: GateStore;
  metadata: Pick<MetadataStore, "find" | "page" | "repositories" | "downloadersOf">;
  /** The artifact service, once built (it is built with this gate's publish hooks). */
  artifacts: () => Pick<ArtifactService, "hold" | "release" | "remove" | "recordFinding">;
  settings: () => GateSettings;
  ecosystemOf: (repository: string) => Ecosystem | undefined;
  coordinates: Parameters<typeof gateFactory>[0]["coordinates"];
  log: FastifyBaseLogger;
}

/** A held file as GET /api/held lists it. */
export interface HeldFile {
  id: string;
  repository: string;
  path: string;
  size: number;
  sha256: string;
  reason: string;
  held: Date | null;
  published: Date;
  downloads: number;
}

const addressOf = (repository: string, path: string): Address => ({ repository, path, segments: path.split("/") });

/** A held file's id in the API: its repository and path, opaque to callers. */
export const heldId = (repository: string, path: string): string => Buffer.from(JSON.stringify([repository, path])).toString("base64url");
function parseHeldId(id: string, bad: () => Error = () => notFound(`no held file ${id}`)): { repository: string; path: string } {
  try {
    const v = JSON.parse(Buffer.from(id, "base64url").toString("utf8")) as unknown;
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === "string" && typeof v[1] === "string") return { repository: v[0], path: v[1] };
  } catch {
    // refused below
  }
  throw bad();
}

/** A finding as its event carries it. */
function eventFinding(m: Pick<FindingRow, "type" | "level" | "advisory" | "summary">): Finding {
  const severity = m.type === "deny-list" ? "high" : ((m.level ?? "LOW").toLowerCase() as Finding["severity"]);
  const reference = m.type === "deny-list" ? undefined : `https://osv.dev/vulnerability/${encodeURIComponent(m.advisory)}`;
  return { type: m.type, severity, summary: `${m.advisory}: ${m.summary}`.slice(0, 500), ...(reference ? { reference } : {}) };
}

/**
 * The screening gate's service: the publish hooks (screen, record findings), the retroactive
 * check of stored versions when new advisory data arrives, the deny list, and held files.
 */
export function gateServiceFactory(deps: GateServiceDeps) {
  const { store } = deps;
  const gate = gateFactory({ store, settings: deps.settings, ecosystemOf: deps.ecosystemOf, coordinates: deps.coordinates });
  const T = (table: string) => `${escapeIdentifier(SCHEMA)}.${escapeIdentifier(table)}`;

  /** Records a stored file's findings (those not recorded before), with the data's age and the file's downloads so far. */
  const record = async (a: { repository: string; path: string }, verdict: NonNullable<Awaited<ReturnType<typeof gate.screen>>>): Promise<FindingRow[]> => {
    const [row, dataLoaded] = await Promise.all([deps.metadata.find(a.repository, a.path), store.loadedAt()]);
    return store.addFindings(findingsOf(a.repository, a.path, verdict, { dataLoaded, downloads: row?.downloads ?? 0, lastDownloaded: row?.lastDownloaded ?? null }));
  };

  const publishGate: PublishGate = {
    screen: (repository, path) => gate.screen(repository, path),
    found: async (a, verdict) => (await record(a, verdict as NonNullable<Awaited<ReturnType<typeof gate.screen>>>)).map(eventFinding),
    // The refusal is the answer that matters: a refusal log that cannot be written is logged, not a 500.
    refused: async (a, v, actor) => {
      const p = (v as NonNullable<Awaited<ReturnType<typeof gate.screen>>>).package;
      await store
        .addRefusal({ repository: a.repository, path: a.path, ecosystem: p.ecosystem, name: p.name, version: p.version, reason: v.reason, principal: `${actor.kind}:${actor.id}` })
        .catch((err: unknown) => deps.log.error({ err, repository: a.repository, path: a.path }, "could not add a refusal to the refusal log"));
    },
  };

  /**
   * New or changed advisory records: every stored version of a package they name is checked
   * against them. New findings are recorded (with the file's downloads so far) and published;
   * a malware match holds the file unless svc.malware-action is ALLOW, and so does any match
   * whose action is HOLD. A version already refused at publish is not stored, so BLOCK here
   * records a finding (the file is already out there).
   */
  const recheck = async (changed: readonly Advisory[]): Promise<{ checked: number; findings: number; held: number }> => {
    const byKey = new Map<string, StoredAdvisory[]>();
    for (const a of changed) for (const key of a.packages) byKey.set(key, [...(byKey.get(key) ?? []), a]);
    return checkStored((key) => {
      const advisories = byKey.get(key);
      return advisories && { advisories, deny: [] };
    }, "new advisory data arrived");
  };

  /**
   * Stored versions checked against what `against` answers for their package (its key,
   * `ecosystem:name`): new findings recorded and published, and the file held where the rules
   * above say (a deny list entry added whose action is BLOCK holds too: the operator refused that
   * version, and what is stored already cannot be refused any more).
   */
  const checkStored = async (
    against: (key: string) => { advisories: readonly StoredAdvisory[]; deny: readonly DenyEntry[] } | undefined,
    when: string,
  ): Promise<{ checked: number; findings: number; held: number }> => {
    const settings = deps.settings();
    const out = { checked: 0, findings: 0, held: 0 };
    for (const r of await deps.metadata.repositories()) {
      const ecosystem = deps.ecosystemOf(r.name);
      if (!ecosystem) continue;
      for (let after: string | undefined; ; ) {
        const page = await deps.metadata.page(r.name, after, 500);
        for (const row of page) {
          const c = deps.coordinates(r.name, row.path);
          if (!c || c.version === "") continue;
          const name = packageName(ecosystem, c.name);
          const data = against(packageKey(ecosystem, name));
          if (!data) continue;
          out.checked++;
          const verdict = verdictOf({ ecosystem, name, version: c.version }, matchesOf(ecosystem, c.version, data.advisories, data.deny, settings, name));
          if (!verdict) continue;
          const added = await record({ repository: r.name, path: row.path }, verdict);
          const a = addressOf(r.name, row.path);
          for (const f of added) await deps.artifacts().recordFinding(a, eventFinding(f), GATE_ACTOR);
          out.findings += added.length;
          const holds = added.filter((f) => (f.type === "malware" && settings.malwareAction !== "ALLOW") || f.action === "HOLD" || (f.type === "deny-list" && f.action === "BLOCK"));
          if (holds.length > 0 && row.heldReason === null) {
            const reason = `${name}@${c.version} held by the screening gate when ${when}: ${holds.map((f) => `${f.type} (${f.advisory}: ${f.summary})`).join("; ")}`.slice(0, 1000);
            if (await deps.artifacts().hold(a, reason, GATE_ACTOR)) out.held++;
          }
        }
        if (page.length < 500) break;
        after = page[page.length - 1]!.path;
      }
    }
    if (out.findings > 0) deps.log.warn(out, `stored versions matched when ${when}`);
    return out;
  };

  /**
   * Retroactive: the versions already stored that a deny list entry names, checked after the
   * answer (a walk over every repository's index; its findings and holds show in the API and the
   * console). The entry is marked checked at the end: one cut by a restart runs again at start.
   */
  const checkDenyEntry = (entry: DenyEntry): void => {
    const key = packageKey(entry.ecosystem as Ecosystem, entry.name);
    void checkStored((k) => (k === key ? { advisories: [], deny: [entry] } : undefined), `it was put on the deny list (${entry.name} ${entry.versions || "*"})`)
      .then(() => store.denyEntryChecked(entry.id))
      .catch((err: unknown) => deps.log.error({ err, entry: entry.id }, "could not check the stored versions against a deny list entry; the next start checks them again"));
  };

  const heldRow = (x: Record<string, unknown>): HeldFile => ({
    id: heldId(x.repository as string, x.path as string),
    repository: x.repository as string,
    path: x.path as string,
    size: Number(x.size),
    sha256: x.sha256 as string,
    reason: x.held_reason as string,
    held: (x.held_at as Date | null) ?? null,
    published: x.updated_at as Date,
    downloads: Number(x.downloads),
  });

  /** A held file by its id; 404 when it is no held file. */
  const heldFile = async (id: string): Promise<{ repository: string; path: string }> => {
    const at = parseHeldId(id);
    const row = await deps.metadata.find(at.repository, at.path);
    if (!row || row.heldReason === null) throw notFound(`no held file ${id}`);
    return at;
  };

  return {
    publishGate,
    recheck,
    /** The verdicts on many versions of one package (a proxy's metadata leaves out what would be refused or held). */
    screenVersions: gate.screenVersions,

    /** Held files, by repository and path, a page after the held file `after` (its id). */
    async held(opts: { repository?: string; after?: string; limit: number }): Promise<HeldFile[]> {
      const after = opts.after ? parseHeldId(opts.after, () => invalid("after", "after must be the id of a held file (the X-Next-Cursor of the previous page)")) : undefined;
      const r = await deps.pool.query(
        `select repository, path, size, sha256, held_reason, held_at, updated_at, downloads from ${T("artifacts")}
         where held_reason is not null and ($1::text is null or repository = $1)
         and ($2::text is null or (repository, path collate "C") > ($2, $3::text collate "C"))
         order by repository, path collate "C" limit $4`,
        [opts.repository ?? null, after?.repository ?? null, after?.path ?? null, opts.limit],
      );
      return r.rows.map(heldRow);
    },

    /** Releases a held file: served again, `artifact.released` published. */
    async release(id: string, actor: Actor): Promise<void> {
      const at = await heldFile(id);
      const done = await deps.artifacts().release(addressOf(at.repository, at.path), `released by ${actor.kind} ${actor.id}`.trim(), actor);
      if (!done) throw conflict(`${at.repository}/${at.path} is not held`);
    },

    /** Discards a held file: removed as a DELETE removes it (its format's rows too: an npm version is unpublished). */
    async discard(id: string, actor: Actor): Promise<void> {
      const at = await heldFile(id);
      await deps.artifacts().remove(addressOf(at.repository, at.path), actor);
    },

    async addDenyEntry(body: { ecosystem: string; name: string; versions: string; reason: string }, actor: Actor) {
      const ecosystem = ECOSYSTEMS.find((e) => e.toLowerCase() === body.ecosystem.trim().toLowerCase());
      if (!ecosystem || !isEcosystem(ecosystem)) throw invalid("ecosystem", `ecosystem must be one of ${ECOSYSTEMS.join(", ")}`);
      const name = body.name.trim();
      if (name === "") throw invalid("name", "name must not be blank");
      if (ecosystem === "Maven" && !/^[^:\s]+:[^:\s]+$/.test(name)) throw invalid("name", "a Maven package is named groupId:artifactId");
      const range = versionRange(ecosystem, body.versions);
      if (!range.ok) throw invalid("versions", range.reason);
      const entry = await store.addDenyEntry({ ecosystem, name: packageName(ecosystem, name), versions: body.versions.trim(), reason: body.reason.trim(), createdBy: `${actor.kind}:${actor.id}` });
      checkDenyEntry(entry);
      return entry;
    },

    /** The deny list entries whose stored versions were never checked (a restart cut the check): checked now. */
    async checkUncheckedDenyEntries(): Promise<void> {
      for (const e of await store.uncheckedDenyEntries()) checkDenyEntry(e);
    },

    /**
     * Confirms a finding (a real problem: the file is held, unless it is already held or gone)
     * or dismisses it (not one: it stays recorded as dismissed; a hold is released only on the
     * held list, so one dismissal never serves a file another finding holds).
     */
    async triage(id: string, status: "confirmed" | "dismissed", note: string | undefined, actor: Actor): Promise<FindingRow> {
      if (!UUID.test(id)) throw notFound(`no finding ${id}`);
      // Only an open finding changes: of two administrators triaging it at once, the second is told who was first.
      const after = await store.triage(id, status, `${actor.kind}:${actor.id}`, note?.trim() || null);
      if (!after) {
        const now = await store.finding(id);
        throw now ? conflict(`finding ${id} is already ${now.status} (by ${now.triagedBy ?? "?"})`) : notFound(`no finding ${id}`);
      }
      if (status === "confirmed") {
        const row = await deps.metadata.find(after.repository, after.path);
        if (row && row.heldReason === null) {
          const reason = `${after.name}@${after.version} held: finding ${after.advisory} confirmed by ${actor.kind} ${actor.id}${after.note ? ` (${after.note})` : ""}`.slice(0, 1000);
          await deps.artifacts().hold(addressOf(after.repository, after.path), reason, actor);
        }
      }
      return after;
    },

    /** Who downloaded the files of some findings (the blast radius): the latest principals of each, and how many in all. */
    downloadersOf: (findings: readonly FindingRow[], limit: number) => deps.metadata.downloadersOf(findings, limit),


    async removeDenyEntry(id: string): Promise<void> {
      if (!UUID.test(id) || !(await store.removeDenyEntry(id))) throw notFound(`no deny list entry ${id}`);
    },
  };
}

export type GateService = ReturnType<typeof gateServiceFactory>;
export type { Match };
