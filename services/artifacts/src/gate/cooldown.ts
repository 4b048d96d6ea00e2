import type { FastifyBaseLogger } from "fastify";
import { invalid, notFound, type Actor } from "@svc/contracts";
import { minAgeMs } from "@svc/kit";
import type { CooldownRefusal, TooYoung } from "../formats/format.js";
import { ECOSYSTEMS, isEcosystem, packageName, type Ecosystem } from "./ecosystems.js";
import type { Allow, CooldownStore } from "./cooldown-store.js";
import { UUID, type GateStore } from "./gate-store.js";

/** The minimum age in force for a repository, and where it comes from (a message names it). */
export interface MinAge {
  ms: number;
  text: string;
  /** "svc.gate.min-age", or "the minimum age of repository <name>". */
  from: string;
}

/** How a version is written in each ecosystem's own messages. */
const SEPARATOR: Record<Ecosystem, string> = { npm: "@", PyPI: "==", Maven: ":", Go: "@", "crates.io": "@" };

/**
 * The versions too young to fetch or list, with why: published less than `min.ms` before `now`,
 * or with no publish time known (fail closed); those `allowed` lets through are left out. A pure
 * function of its inputs.
 */
export function youngVersions(
  coordinate: (version: string) => string,
  published: ReadonlyMap<string, Date | undefined>,
  min: MinAge | undefined,
  allowed: (version: string) => boolean,
  now: number,
): Map<string, string> {
  const out = new Map<string, string>();
  if (!min || min.ms <= 0) return out;
  for (const [version, at] of published) {
    if (allowed(version)) continue;
    const t = at?.getTime();
    if (t === undefined || Number.isNaN(t)) {
      out.set(version, `${coordinate(version)} has no publish time known upstream, so it counts as younger than the minimum age of ${min.text} (${min.from}): the cooldown keeps it back until an administrator allows it (/api/gate/allows)`);
    } else if (now - t < min.ms) {
      out.set(
        version,
        `${coordinate(version)} is younger than the minimum age of ${min.text} (${min.from}): published ${new Date(t).toISOString()} (${ageText(now - t)} ago), available from ${new Date(t + min.ms).toISOString()}; the cooldown keeps it back until then`,
      );
    }
  }
  return out;
}

/** An age as a person reads it: "45s", "12m", "3h 5m", "2d 4h" (a version published in the future reads "0s"). */
export function ageText(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 ? `${h}h ${m % 60}m` : `${h}h`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d}d ${h % 24}h` : `${d}d`;
}

/** A minimum age as written (svc.gate.min-age, a repository's override) read; undefined for none. */
export const minAgeOf = (text: string, from: string): MinAge | undefined => {
  const ms = minAgeMs(text);
  return ms ? { ms, text: text.trim(), from } : undefined;
};

/**
 * How long a cooldown refusal of one file to one principal stands for its repeats: a client
 * retrying (a build in a loop, a CI matrix on one key) adds one entry to the refusal log per hour,
 * not one per request.
 */
export const REFUSAL_REPEAT_MS = 60 * 60_000;
/** The refusals this process remembers having recorded (to skip Postgres for a repeat): at most this many. */
const REMEMBERED_REFUSALS = 10_000;

export interface CooldownDeps {
  store: CooldownStore;
  /** The refusal log, where refused requests for young files are kept. */
  refusals: Pick<GateStore, "addRefusalOnce">;
  log: Pick<FastifyBaseLogger, "error">;
  /** svc.gate.min-age as it is now (it changes at run time); "" for none. */
  minAge: () => string;
  /** The OSV ecosystem of a repository's format; undefined: no packages (raw), no cooldown. */
  ecosystemOf: (repository: string) => Ecosystem | undefined;
  now?: () => number;
}

/**
 * The cooldown (docs/administration/screening.md, "Cooldown"): a proxied version younger than
 * svc.gate.min-age (or its repository's own minimum age) is neither fetched nor listed, unless
 * an allow lets its package (or that version) through.
 */
export function cooldownFactory(deps: CooldownDeps) {
  const now = deps.now ?? Date.now;
  const { store } = deps;

  /** The minimum age in force for a repository: its own, else svc.gate.min-age. */
  const minAgeFor = async (repository: string): Promise<MinAge | undefined> => {
    const own = await store.repositoryMinAge(repository);
    return own === null ? minAgeOf(deps.minAge(), "svc.gate.min-age") : minAgeOf(own, `the minimum age of repository ${repository}`);
  };

  const tooYoung: TooYoung = async (repository, name, published) => {
    const ecosystem = deps.ecosystemOf(repository);
    if (!ecosystem || published.size === 0) return new Map();
    const min = await minAgeFor(repository);
    if (!min) return new Map();
    const allows = await store.allowsOf(repository, ecosystem, packageName(ecosystem, name));
    const allowed = (v: string) => allows.some((a) => a.version === null || a.version === v);
    return youngVersions((v) => `${name}${SEPARATOR[ecosystem]}${v}`, published, min, allowed, now());
  };

  /** When this process last recorded a refusal, by repository, path and principal (oldest first). */
  const recorded = new Map<string, number>();

  /**
   * A request for a young version's file refused (CooldownRefusal): kept in the refusal log with
   * who asked and what they were told, once per file and principal within REFUSAL_REPEAT_MS
   * (remembered here, and checked in Postgres for every node). The refusal is the answer that
   * matters: a log that cannot be written is logged, never a 500.
   */
  const refused = async (r: CooldownRefusal, actor: Actor): Promise<void> => {
    const ecosystem = deps.ecosystemOf(r.file.repository);
    if (!ecosystem) return;
    const principal = `${actor.kind}:${actor.id}`;
    const key = JSON.stringify([r.file.repository, r.file.path, principal]);
    const t = now();
    const last = recorded.get(key);
    if (last !== undefined && t - last < REFUSAL_REPEAT_MS) return;
    recorded.delete(key);
    recorded.set(key, t);
    if (recorded.size > REMEMBERED_REFUSALS) recorded.delete(recorded.keys().next().value!);
    const { repository, path, name, version } = r.file;
    await deps.refusals
      .addRefusalOnce({ repository, path, ecosystem, name: packageName(ecosystem, name), version, reason: r.message, principal }, REFUSAL_REPEAT_MS)
      .catch((err: unknown) => {
        recorded.delete(key);
        deps.log.error({ err, repository, path }, "could not add a cooldown refusal to the refusal log");
      });
  };

  return {
    tooYoung,
    refused,

    /** A repository's own minimum age as GET /api/repositories/<name> shows it: "off", the duration, or null (inherits). */
    async repositoryGate(repository: string): Promise<{ minAge: string | null }> {
      const own = await store.repositoryMinAge(repository);
      if (own === null && !(await store.hasRepository(repository))) throw notFound(`no repository named ${repository}`);
      return { minAge: own === null ? null : own === "" ? "off" : own };
    },

    /** Sets a repository's own minimum age: a duration, "0" or "off" (none for it), or null (inherit svc.gate.min-age). */
    async setRepositoryGate(repository: string, minAge: string | null): Promise<{ minAge: string | null }> {
      let stored: string | null = null;
      if (minAge !== null) {
        const ms = minAgeMs(minAge);
        if (ms === undefined) throw invalid("minAge", "minAge must be a duration such as 72h, 3d, 30m or P3D; 0 or off for no cooldown in this repository; null to inherit svc.gate.min-age");
        stored = ms === 0 ? "" : minAge.trim();
      }
      if (!(await store.setRepositoryMinAge(repository, stored))) throw notFound(`no repository named ${repository}`);
      return { minAge: stored === null ? null : stored === "" ? "off" : stored };
    },

    async addAllow(body: { repository?: string; ecosystem: string; name: string; version?: string; reason: string }, actor: Actor): Promise<Allow> {
      const ecosystem = ECOSYSTEMS.find((e) => e.toLowerCase() === body.ecosystem.trim().toLowerCase());
      if (!ecosystem || !isEcosystem(ecosystem)) throw invalid("ecosystem", `ecosystem must be one of ${ECOSYSTEMS.join(", ")}`);
      const name = body.name.trim();
      if (name === "") throw invalid("name", "name must not be blank");
      if (ecosystem === "Maven" && !/^[^:\s]+:[^:\s]+$/.test(name)) throw invalid("name", "a Maven package is named groupId:artifactId");
      const version = body.version?.trim() || null;
      const reason = body.reason.trim();
      if (reason === "") throw invalid("reason", "reason must not be blank: say why this package may skip the cooldown");
      const repository = body.repository?.trim() || null;
      if (repository !== null && !(await store.hasRepository(repository))) throw invalid("repository", `no repository named ${repository}`);
      return store.addAllow({ repository, ecosystem, name: packageName(ecosystem, name), version, reason, createdBy: `${actor.kind}:${actor.id}` });
    },

    async removeAllow(id: string): Promise<void> {
      if (!UUID.test(id) || !(await store.removeAllow(id))) throw notFound(`no allow ${id}`);
    },

    allows: (after: string | undefined, limit: number) => store.allows(after, limit),
  };
}
export type Cooldown = ReturnType<typeof cooldownFactory>;
