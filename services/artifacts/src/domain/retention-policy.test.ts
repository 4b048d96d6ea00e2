import { describe, expect, it } from "vitest";
import { parseRetentionPolicy } from "./retention-policy.js";

describe("retention policy", () => {
  it("keeps what an operator wrote, normalising the folder", () => {
    expect(parseRetentionPolicy({ keepVersions: 3 })).toEqual({ keepVersions: 3 });
    expect(parseRetentionPolicy({ path: "/com/acme/", maxAge: "P30D", unusedFor: "PT12H" })).toEqual({ path: "com/acme", maxAge: "P30D", unusedFor: "PT12H" });
    expect(parseRetentionPolicy({ path: "", keepVersions: 1 })).toEqual({ keepVersions: 1 });
  });

  it("refuses a policy that says nothing, and names each bad field", () => {
    expect(() => parseRetentionPolicy({})).toThrow(/at least one/);
    expect(() => parseRetentionPolicy({ keepVersions: 0 })).toThrow(expect.objectContaining({ field: "keepVersions" }));
    expect(() => parseRetentionPolicy({ keepVersions: 1.5 })).toThrow(expect.objectContaining({ field: "keepVersions" }));
    expect(() => parseRetentionPolicy({ maxAge: "30 days" })).toThrow(expect.objectContaining({ field: "maxAge" }));
    expect(() => parseRetentionPolicy({ unusedFor: "P0D" })).toThrow(expect.objectContaining({ field: "unusedFor" }));
    expect(() => parseRetentionPolicy({ path: "a/../b", keepVersions: 1 })).toThrow(expect.objectContaining({ field: "path" }));
  });
});
