import { describe, expect, it } from "vitest";
import { ARTIFACT_EVENT_KINDS, eventParsers, subjectFor } from "@svc/contracts";
import { kindOfSubject } from "./event-consumer.js";

describe("reading the kind off a subject", () => {
  it("knows every artifact event of the catalog, each with a parser", () => {
    for (const kind of ARTIFACT_EVENT_KINDS) {
      expect(kindOfSubject(subjectFor("acme", kind), "acme")).toBe(kind);
      expect(typeof eventParsers[kind]).toBe("function");
    }
  });

  it("leaves out other tenants, other versions and other kinds", () => {
    expect(kindOfSubject("svc.other.artifact.published.v1", "acme")).toBeUndefined();
    expect(kindOfSubject("svc.acme.artifact.published.v2", "acme")).toBeUndefined();
    expect(kindOfSubject("svc.acme.artifact.renamed.v1", "acme")).toBeUndefined();
    expect(kindOfSubject(subjectFor("acme", "credential.changed"), "acme")).toBeUndefined();
  });
});
