import { describe, expect, it } from "vitest";
import { ARTIFACT_EVENT_KINDS, eventParsers, subjectFor, type EventKind } from "./events.js";

const base = {
  id: "2b0c1d0e-0000-4000-8000-000000000000",
  time: "2026-11-22T00:00:00.000Z",
  tenant: "default",
  repository: "default",
  path: "a/b.txt",
  size: 3,
  digest: `sha256:${"a".repeat(64)}`,
  actor: { kind: "key", id: "f".repeat(64) },
};

describe("event catalog", () => {
  it("has a parser for every kind, and every kind a versioned subject", () => {
    const kinds = Object.keys(eventParsers) as EventKind[];
    for (const k of ARTIFACT_EVENT_KINDS) expect(kinds).toContain(k);
    expect(kinds).toContain("credential.changed");
    expect(subjectFor("acme", "artifact.published")).toBe("svc.acme.artifact.published.v1");
  });

  it("accepts well-formed artifact events of each kind", () => {
    expect(eventParsers["artifact.published"]({ ...base, kind: "artifact.published", replaced: false })).toBeTruthy();
    expect(eventParsers["artifact.removed"]({ ...base, kind: "artifact.removed", reason: "retention" })).toBeTruthy();
    expect(eventParsers["artifact.held"]({ ...base, kind: "artifact.held", reason: "quarantine" })).toBeTruthy();
    expect(eventParsers["artifact.released"]({ ...base, kind: "artifact.released", reason: "cleared" })).toBeTruthy();
    expect(eventParsers["artifact.finding"]({ ...base, kind: "artifact.finding", finding: { type: "malware", severity: "critical", summary: "EICAR" } })).toBeTruthy();
  });

  it("sets aside what does not match its schema", () => {
    expect(eventParsers["artifact.published"]({ ...base, kind: "artifact.removed", replaced: false })).toBeUndefined();
    expect(eventParsers["artifact.published"]({ ...base, kind: "artifact.published" })).toBeUndefined();
    expect(eventParsers["artifact.published"]({ ...base, kind: "artifact.published", replaced: false, digest: "md5:x" })).toBeUndefined();
    expect(eventParsers["artifact.removed"]({ ...base, kind: "artifact.removed", reason: "whim" })).toBeUndefined();
    expect(eventParsers["artifact.finding"]({ ...base, kind: "artifact.finding", finding: { type: "malware", severity: "dire", summary: "x" } })).toBeUndefined();
    expect(eventParsers["artifact.published"](null)).toBeUndefined();
  });

  it("reads a package file's coordinates when present, and sets aside malformed ones", () => {
    const pkg = { format: "npm", name: "@acme/util", version: "1.0.0", file: "util-1.0.0.tgz" };
    expect(eventParsers["artifact.published"]({ ...base, kind: "artifact.published", replaced: false, package: pkg })?.package).toEqual(pkg);
    expect(eventParsers["artifact.removed"]({ ...base, kind: "artifact.removed", reason: "request", package: { ...pkg, version: 1 } })).toBeUndefined();
    expect(eventParsers["artifact.published"]({ ...base, kind: "artifact.published", replaced: false, package: null })).toBeUndefined();
  });
});
