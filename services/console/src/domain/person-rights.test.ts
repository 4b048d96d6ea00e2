import { describe, expect, it } from "vitest";
import { layout } from "../views/layout.js";
import { html } from "../pages/html.js";
import { personRights } from "./person-rights.js";

describe("what a person may do, for the forms a page offers", () => {
  it("reads rights over * from direct and group grants, roles expanded, lapsed grants left out", () => {
    const may = personRights([
      { scope: "*", tokens: ["read-only", "manage:read"], expires: null },
      { scope: "*", tokens: ["manage:write"], expires: "2000-01-01T00:00:00Z" },
      { scope: "libs", tokens: ["deploy"], expires: null },
    ]);
    expect(may("manage:read")).toBe(true);
    expect(may("manage:write")).toBe(false);
    expect(may("repository:write")).toBe(false);
    expect(may("repository:write", "libs")).toBe(true);
    expect(may("repository:write", "other")).toBe(false);
    expect(personRights([{ scope: "*", tokens: ["admin"], expires: null }])("manage:write")).toBe(true);
  });

  it("holds nothing without grants", () => {
    expect(personRights([])("manage:read")).toBe(false);
  });
});

describe("the layout's navigation", () => {
  const viewer = { personId: "oidc/x", csrf: "t" };
  it("is left out for a person who may open no page, and shown to one who may", () => {
    const none = layout({ title: "No access yet", main: html`<p>x</p>`, viewer: { ...viewer, seesPages: false } }).text;
    expect(none).not.toContain("<nav");
    expect(none).not.toContain('href="/ui/credentials"');
    expect(none).toContain("Sign out");
    const some = layout({ title: "Home", main: html`<p>x</p>`, viewer: { ...viewer, seesPages: true } }).text;
    expect(some).toContain('<nav aria-label="Console pages">');
    expect(some).toContain('href="/ui/credentials"');
  });
});
