import { describe, expect, it } from "vitest";
import { natsConnectOptions } from "./messaging.js";

describe("natsConnectOptions", () => {
  it("takes the user and password out of the URL into the client's options", () => {
    expect(natsConnectOptions("nats://svc:p%40ss@127.0.0.1:4222")).toEqual({ servers: ["nats://127.0.0.1:4222"], user: "svc", pass: "p@ss" });
  });

  it("leaves URLs without them as they are, every seed of a list", () => {
    expect(natsConnectOptions("nats://a:4222, nats://b:4222")).toEqual({ servers: ["nats://a:4222", "nats://b:4222"] });
    expect(natsConnectOptions("nats://a:4222,nats://u:p@b:4222")).toEqual({ servers: ["nats://a:4222", "nats://b:4222"], user: "u", pass: "p" });
  });
});
