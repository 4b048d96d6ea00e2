import { describe, expect, it } from "vitest";
import { dependencyFailure } from "./dependency-failure.js";

const sysErr = (code: string) => Object.assign(new Error(code), { code });

describe("dependencyFailure", () => {
  it("names a dependency that does not answer, however deep the cause, and a full store", () => {
    expect(dependencyFailure(sysErr("ECONNREFUSED"))).toBe("unavailable");
    expect(dependencyFailure({ error: new Error("wrapped", { cause: sysErr("UND_ERR_CONNECT_TIMEOUT") }) })).toBe("unavailable");
    expect(dependencyFailure(new AggregateError([sysErr("ECONNREFUSED")]))).toBe("unavailable");
    expect(dependencyFailure(sysErr("57P01"))).toBe("unavailable");
    expect(dependencyFailure(sysErr("08006"))).toBe("unavailable");
    expect(dependencyFailure(new Error("Connection terminated unexpectedly"))).toBe("unavailable");
    expect(dependencyFailure(Object.assign(new Error("auth answered 503"), { name: "InternalCallError", status: 503 }))).toBe("unavailable");
    expect(dependencyFailure(Object.assign(new Error("the object store did not answer"), { name: "BlobStoreUnavailable" }))).toBe("unavailable");
    expect(dependencyFailure(sysErr("ENOSPC"))).toBe("full");
  });

  it("leaves a bug a bug", () => {
    expect(dependencyFailure(new TypeError("x is undefined"))).toBeUndefined();
    expect(dependencyFailure(sysErr("ENOTDIR"))).toBeUndefined();
    expect(dependencyFailure(sysErr("23505"))).toBeUndefined();
    expect(dependencyFailure("a string")).toBeUndefined();
  });
});
