import { describe, expect, it } from "vitest";
import { storageStatus } from "./open.js";

describe("a node's storage status", () => {
  it("a node reports a plain-http object store only for http beyond this machine's loopback", () => {
    expect(storageStatus({ storage: "s3", s3Endpoint: "http://rgw.example.internal:7480" })).toEqual({ "object-store": "plain-http" });
    expect(storageStatus({ storage: "s3", s3Endpoint: "https://rgw.example.internal" })).toEqual({});
    expect(storageStatus({ storage: "s3", s3Endpoint: "http://127.0.0.1:7480" })).toEqual({});
    expect(storageStatus({ storage: "s3", s3Endpoint: "http://localhost:7480" })).toEqual({});
    expect(storageStatus({ storage: "s3", s3Endpoint: "" })).toEqual({});
    expect(storageStatus({ storage: "filesystem", s3Endpoint: "http://rgw.example.internal" })).toEqual({});
  });
});
