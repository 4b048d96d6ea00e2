import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSuite, type Suite } from "./suite.js";

type Credential = { id: string; expires: string | null; state: string; allowedAddresses: string[]; grants: { scope: string }[] };

let s: Suite;
beforeAll(async () => {
  s = await startSuite();
  await s.call("PUT", "/repository/default/lifecycle.txt", { key: s.bootstrapKey, body: "x" });
});
afterAll(() => s?.stop());

const api = (method: string, path: string, body?: unknown) => s.call(method, path, { key: s.bootstrapKey, body: body as object });
const credential = async (id: string) => (await (await api("GET", `/api/credentials/${id}`)).json()) as Credential;
const download = (key: string) => s.call("GET", "/repository/default/lifecycle.txt", { key });

/** Polls until `ok` holds; waits for a state, never for a guessed time. */
async function until<T>(fn: () => Promise<T>, ok: (v: T) => boolean, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe("an expired key is final", () => {
  it("no grant, grant removal, new expiry or allowlist brings it back: 409, and it stays refused", async () => {
    const k = await s.mint({ expires: "PT3S", grants: [{ scope: "*", tokens: ["repository:read"] }] });
    expect((await download(k.key)).status).toBe(200);
    expect((await until(() => download(k.key), (r) => r.status === 401)).status).toBe(401);
    const before = await credential(k.id);
    expect(before.state).toBe("expired");

    expect((await api("POST", `/api/credentials/${k.id}/grants`, { scope: "*", tokens: ["*"] })).status).toBe(409);
    expect((await api("DELETE", `/api/credentials/${k.id}/grants/*`)).status).toBe(409);
    for (const expires of ["P30D", "", null]) expect((await api("PUT", `/api/credentials/${k.id}/expiry`, { expires })).status, String(expires)).toBe(409);
    expect((await api("PUT", `/api/credentials/${k.id}/allowed-ips`, { addresses: "" })).status).toBe(409);
    expect((await api("POST", `/api/credentials/${k.id}/rotate`, {})).status).toBe(409);

    expect(await credential(k.id)).toEqual(before);
    expect((await download(k.key)).status).toBe(401);
    // Ending it further is always allowed.
    expect((await api("DELETE", `/api/credentials/${k.id}`)).status).toBe(204);
    expect((await credential(k.id)).state).toBe("revoked");
  });

  it("a revoked key takes no grant removal either", async () => {
    const k = await s.mint({ grants: [{ scope: "*", tokens: ["repository:read"] }] });
    await api("DELETE", `/api/credentials/${k.id}`);
    expect((await api("DELETE", `/api/credentials/${k.id}/grants/*`)).status).toBe(409);
    expect((await api("PUT", `/api/credentials/${k.id}/expiry`, { expires: null })).status).toBe(409);
    expect((await download(k.key)).status).toBe(401);
  });
});

describe("a key retired by rotation keeps its end", () => {
  it("its expiry can be brought forward, never cleared or pushed back", async () => {
    const k = await s.mint({ grants: [{ scope: "*", tokens: ["repository:read"] }] });
    const rotated = await api("POST", `/api/credentials/${k.id}/rotate`, { overlap: "P7D" });
    expect(rotated.status).toBe(201);
    const { predecessor } = (await rotated.json()) as { predecessor: { expires: string } };
    for (const expires of [null, "", "P30D"]) {
      const res = await api("PUT", `/api/credentials/${k.id}/expiry`, { expires });
      expect(res.status, String(expires)).toBe(409);
      expect(((await res.json()) as { detail: string }).detail).toMatch(/rotation/);
    }
    expect((await credential(k.id)).expires).toBe(predecessor.expires);
    const sooner = await api("PUT", `/api/credentials/${k.id}/expiry`, { expires: "P1D" });
    expect(sooner.status).toBe(200);
    expect(Date.parse(((await sooner.json()) as Credential).expires!)).toBeLessThan(Date.parse(predecessor.expires));
  });

  it("rotated out with PT0S, it never comes back with expires: null", async () => {
    const k = await s.mint({ grants: [{ scope: "*", tokens: ["repository:read"] }] });
    expect((await api("POST", `/api/credentials/${k.id}/rotate`, { overlap: "PT0S" })).status).toBe(201);
    expect((await api("PUT", `/api/credentials/${k.id}/expiry`, { expires: null })).status).toBe(409);
    const after = await credential(k.id);
    expect(after.state).toBe("expired");
    expect(after.expires).not.toBeNull();
    expect((await download(k.key)).status).toBe(401);
  });
});

describe("clearing takes the explicit blank or null", () => {
  it("{} on PUT .../expiry or .../allowed-ips is a 400 naming the field, and changes nothing", async () => {
    const k = await s.mint({ expires: "P10D" });
    await api("PUT", `/api/credentials/${k.id}/allowed-ips`, { addresses: "10.0.0.0/8" });
    const before = await credential(k.id);
    for (const [path, field] of [["expiry", "expires"], ["allowed-ips", "addresses"]] as const) {
      const res = await api("PUT", `/api/credentials/${k.id}/${path}`, {});
      expect(res.status, path).toBe(400);
      expect(JSON.stringify(await res.json()), path).toContain(field);
    }
    expect(await credential(k.id)).toEqual(before);
    expect((await (await api("PUT", `/api/credentials/${k.id}/allowed-ips`, { addresses: null })).json()) as Credential).toMatchObject({ allowedAddresses: [] });
    expect((await (await api("PUT", `/api/credentials/${k.id}/expiry`, { expires: "" })).json()) as Credential).toMatchObject({ expires: null });
  });
});
