// npx tsx bench/identity-sign.ts
// Cost of the internal identity per request, in isolation: signing as the gateway does and
// verifying as an upstream does (replay guard included).
import { createHmac, createSecretKey } from "node:crypto";
import { ReplayGuard, bodyDigest, identitySigner, identityVerifier } from "@svc/kit";

const secret = "x".repeat(40);
const sign = identitySigner(secret);
const principal = "key:default:" + "ab".repeat(32);
const path = "/repository/default/com/acme/app/1.0/app-1.0.jar";
const N = 300_000;
function run(label: string, f: () => void) {
  for (let i = 0; i < 20_000; i++) f();
  const t = process.hrtime.bigint();
  for (let i = 0; i < N; i++) f();
  console.log(`${label}: ${(Number(process.hrtime.bigint() - t) / N / 1000).toFixed(2)} µs/op`);
}
const client = { accept: "*/*", "user-agent": "curl/8", "service-repository-name": "default" };
// The signature before it covered the body, headers and a nonce (method, path, principal, ts), for comparison in the same run.
const key = createSecretKey(Buffer.from(secret));
run("sign GET, before (v1)", () => {
  const h: Record<string, unknown> = { ...client };
  const ts = String(Math.floor(Date.now() / 1000));
  h["x-svc-identity"] = principal;
  h["x-svc-identity-ts"] = ts;
  h["x-svc-identity-sig"] = createHmac("sha256", key).update(`GET\n${path}\n${principal}\n${ts}`).digest("base64url");
});
run("sign GET", () => sign({ ...client }, "GET", path, principal));
run("sign GET (again, warm)", () => sign({ ...client }, "GET", path, principal));
const signed: Record<string, string> = { ...client };
sign(signed, "GET", path, principal);
const plain = identityVerifier(secret);
run("verify GET (no replay guard; as before)", () => void plain("GET", path, signed));
const verify = identityVerifier(secret, { replay: new ReplayGuard(60) });
run("sign + verify GET (replay guard)", () => {
  const h: Record<string, string> = { ...client };
  sign(h, "GET", path, principal);
  verify("GET", path, h);
});
const body = JSON.stringify({ scope: "default:libs", tokens: ["repository:read"] });
run("digest + sign 60-byte API body", () => sign({ "content-type": "application/json" }, "POST", "/api/credentials/x/grants", principal, bodyDigest(body)));
