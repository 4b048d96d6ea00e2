import { describe, expect, it } from "vitest";
import { nodeUrlOf } from "./fetch-relay.js";

describe("an artifacts node's own address for the others", () => {
  it("is svc.artifacts.node-url when set, else svc.host and svc.port, with a machine address for a wildcard host", () => {
    expect(nodeUrlOf({ artifactsNodeUrl: "http://10.0.0.7:8080/", host: "0.0.0.0", port: 8080 })).toBe("http://10.0.0.7:8080");
    expect(nodeUrlOf({ artifactsNodeUrl: "", host: "127.0.0.1", port: 18082 })).toBe("http://127.0.0.1:18082");
    expect(nodeUrlOf({ artifactsNodeUrl: "", host: "::1", port: 18082 })).toBe("http://[::1]:18082");
    const wildcard = nodeUrlOf({ artifactsNodeUrl: "", host: "0.0.0.0", port: 8080 });
    expect(wildcard).toMatch(/^http:\/\/\d+\.\d+\.\d+\.\d+:8080$/);
    expect(wildcard).not.toBe("http://0.0.0.0:8080");
  });
});
