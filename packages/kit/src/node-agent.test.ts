import { describe, expect, it } from "vitest";
import { controlSubjects, listenedControlSubjects } from "./node-agent.js";

describe("listenedControlSubjects", () => {
  const current = "c".repeat(32);
  const previous = "p".repeat(32);

  it("listens on the previous secret's control subjects too while a rotation rolls out, its own first", () => {
    expect(listenedControlSubjects({ internalSecret: current, internalSecretPrevious: previous })).toEqual([controlSubjects(current), controlSubjects(previous)]);
    expect(controlSubjects(current).heartbeat).not.toBe(controlSubjects(previous).heartbeat);
  });

  it("listens on its own only otherwise", () => {
    expect(listenedControlSubjects({ internalSecret: current, internalSecretPrevious: "" })).toEqual([controlSubjects(current)]);
    expect(listenedControlSubjects({ internalSecret: current, internalSecretPrevious: current })).toEqual([controlSubjects(current)]);
  });
});
