import { describe, expect, it } from "vitest";
import { repositoryCheckFactory } from "./repository-check.js";

const silent = { debug: () => {} };

function setup(names: string[] | (() => Promise<string[]>)) {
  let t = 0;
  let asked = 0;
  const check = repositoryCheckFactory({
    repositoryNames: async () => {
      asked++;
      return typeof names === "function" ? names() : names;
    },
    log: silent,
    now: () => t,
  });
  return { check, asked: () => asked, advance: (ms: number) => (t += ms) };
}

describe("repository check", () => {
  it("warns of an unknown repository, with or without a prefix, and never of * or a known one", async () => {
    const { check } = setup(["default", "libs"]);
    expect(await check.warningsFor("libz")).toEqual(['repository "libz" does not exist (yet): check the name']);
    expect(await check.warningsFor("libz:com/acme")).toEqual(['repository "libz" does not exist (yet): check the name']);
    for (const scope of ["default", "libs:com/acme", "*", "*:com/acme"]) expect(await check.warningsFor(scope), scope).toEqual([]);
  });

  it("asks artifacts once for concurrent grants and answers known names from the list for a few seconds", async () => {
    const { check, asked, advance } = setup(["default"]);
    await Promise.all([check.warningsFor("default"), check.warningsFor("default"), check.warningsFor("default")]);
    expect(asked()).toBe(1);
    advance(4_000);
    await check.warningsFor("default");
    expect(asked()).toBe(1);
    advance(2_000);
    await check.warningsFor("default");
    expect(asked()).toBe(2);
  });

  it("asks again for a name it has not seen, so a repository created a moment ago does not warn", async () => {
    let names = ["default"];
    const { check, advance } = setup(async () => names);
    expect(await check.warningsFor("libs")).toHaveLength(1);
    names = ["default", "libs"];
    advance(1_500);
    expect(await check.warningsFor("libs")).toEqual([]);
  });

  it("gives no warning when artifacts cannot be asked, and asks again next time", async () => {
    let up = false;
    const { check, asked, advance } = setup(async () => {
      if (!up) throw new Error("connect ECONNREFUSED");
      return ["default"];
    });
    expect(await check.warningsFor("libz")).toEqual([]);
    up = true;
    advance(10);
    expect(await check.warningsFor("libz")).toHaveLength(1);
    expect(asked()).toBe(2);
  });
});
