import { promises as dns, type LookupAddress } from "node:dns";
import http from "node:http";
import https from "node:https";
import { isIP } from "node:net";
import { rootCertificates } from "node:tls";
import { classifyAddress, describeVerdict, hostOf, rangeText } from "@svc/kit";
import { webhookHeaders } from "./signature.js";

export interface Attempt {
  url: string;
  /** webhook-id: the same on every attempt of one delivery, so receivers can drop repeats. */
  id: string;
  body: string;
  key?: Buffer;
}

export type AttemptResult =
  | { outcome: "delivered"; status: number }
  /** Worth trying again: no answer, a connection or TLS error, a non-2xx answer. */
  | { outcome: "failed"; status?: number; error: string }
  /** The address check said no; trying again would not change that. */
  | { outcome: "refused"; error: string };

export type Resolver = (host: string) => Promise<LookupAddress[]>;

export interface SenderDeps {
  allowInternal: boolean;
  timeoutMs: number;
  /** Sockets kept open per endpoint: also the most attempts in flight to one endpoint. */
  maxSockets?: number;
  resolve?: Resolver;
  /** Certificates trusted on top of the usual roots (tests; NODE_EXTRA_CA_CERTS does the same for a process). */
  extraCa?: string[];
  now?: () => number;
}

const systemResolve: Resolver = (host) => dns.lookup(host, { all: true, verbatim: true });

const MAX_NOTE = 200;
const printable = (s: string) => s.replace(/[^\x20-\x7e]+/g, " ").trim().slice(0, MAX_NOTE);

/** Certificate checks whose usual cause is a private or intermediate CA the process does not trust. */
const UNTRUSTED = new Set(["UNABLE_TO_VERIFY_LEAF_SIGNATURE", "UNABLE_TO_GET_ISSUER_CERT", "UNABLE_TO_GET_ISSUER_CERT_LOCALLY", "SELF_SIGNED_CERT_IN_CHAIN", "DEPTH_ZERO_SELF_SIGNED_CERT", "CERT_UNTRUSTED"]);

/**
 * What to do about a TLS failure, so the delivery record says it rather than leaving an
 * operator to look the code up. Appended after the (capped) error text, never cut off.
 */
export function tlsAdvice(code: string | undefined, host: string): string {
  if (code && UNTRUSTED.has(code)) {
    return "; the endpoint's certificate is not signed by an authority the notifier trusts: for a private CA, start the notifier with NODE_EXTRA_CA_CERTS=<file holding the CA's PEM certificate>; or have the endpoint send its whole chain";
  }
  if (code === "CERT_HAS_EXPIRED") return "; the endpoint's certificate has expired: the endpoint must renew it";
  if (code === "CERT_NOT_YET_VALID") return "; the endpoint's certificate is not valid yet: check the clocks of both machines";
  if (code === "ERR_TLS_CERT_ALTNAME_INVALID") return `; the endpoint's certificate was not issued for ${host}: use a name it names, or reissue it`;
  return "";
}

/**
 * POSTs one signed delivery. The name is resolved here, every address it resolves to is
 * checked (unless internal addresses are allowed), and the connection is pinned to those
 * checked addresses through `lookup`, so a name that resolves differently a moment later
 * (DNS rebinding) cannot steer the request elsewhere. TLS still verifies the certificate
 * against the name (SNI and identity check use the URL's host). Redirects are never followed.
 */
export function webhookSenderFactory(deps: SenderDeps) {
  const resolve = deps.resolve ?? systemResolve;
  const now = deps.now ?? Date.now;
  const ca = deps.extraCa?.length ? [...rootCertificates, ...deps.extraCa] : undefined;
  const agents = new Map<string, http.Agent>();
  const agentFor = (u: URL): http.Agent => {
    let a = agents.get(u.origin);
    if (!a) {
      const opts = { keepAlive: true, maxSockets: deps.maxSockets ?? 4, timeout: deps.timeoutMs };
      a = u.protocol === "https:" ? new https.Agent(opts) : new http.Agent(opts);
      agents.set(u.origin, a);
    }
    return a;
  };

  /** Where the request may go: the checked addresses, or why not. */
  async function vet(host: string): Promise<{ ok: true; addresses: LookupAddress[] } | { ok: false; result: AttemptResult }> {
    let addresses: LookupAddress[];
    const family = isIP(host);
    if (family !== 0) addresses = [{ address: host, family }];
    else {
      try {
        addresses = await resolve(host);
      } catch (err) {
        const e = err as NodeJS.ErrnoException;
        return { ok: false, result: { outcome: "failed", error: `cannot resolve ${host}: ${e.code ?? e.message}` } };
      }
      if (addresses.length === 0) return { ok: false, result: { outcome: "failed", error: `cannot resolve ${host}: no addresses` } };
    }
    if (!deps.allowInternal) {
      const bad = addresses.map((a) => classifyAddress(a.address)).find((v) => !v.allowed);
      if (bad) {
        const says = family !== 0 ? describeVerdict(bad) : `${host} resolves to ${bad.address}, which is ${rangeText(bad)}`;
        return { ok: false, result: { outcome: "refused", error: `refused: ${says}; only public addresses are allowed unless svc.webhook-allow-internal=true` } };
      }
    }
    return { ok: true, addresses };
  }

  async function send(attempt: Attempt): Promise<AttemptResult> {
    const u = new URL(attempt.url);
    if (u.protocol !== "https:" && !(deps.allowInternal && u.protocol === "http:")) {
      return { outcome: "refused", error: `refused: ${u.protocol} endpoints need svc.webhook-allow-internal=true` };
    }
    const host = hostOf(u);
    const v = await vet(host);
    if (!v.ok) return v.result;
    const addresses = v.addresses;
    const pinned = (_name: string, options: { all?: boolean; family?: number }, cb: (...args: unknown[]) => void) => {
      const usable = options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
      const list = usable.length ? usable : addresses;
      if (options.all) cb(null, list);
      else cb(null, list[0]!.address, list[0]!.family);
    };

    const body = attempt.body;
    const headers: Record<string, string | number> = {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(body),
      "user-agent": "svc-notifier/1",
      ...webhookHeaders(attempt.key, attempt.id, Math.floor(now() / 1000), body),
    };
    const lib = u.protocol === "https:" ? https : http;
    return new Promise<AttemptResult>((settle) => {
      let done = false;
      let timer: NodeJS.Timeout | undefined;
      const finish = (r: AttemptResult) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        settle(r);
      };
      const req = lib.request({
        protocol: u.protocol,
        hostname: host,
        port: u.port || undefined,
        path: `${u.pathname}${u.search}`,
        method: "POST",
        headers,
        agent: agentFor(u),
        lookup: pinned as never,
        ...(u.protocol === "https:" && isIP(host) === 0 ? { servername: host } : {}),
        ...(ca ? { ca } : {}),
      });
      timer = setTimeout(() => req.destroy(new Error(`no answer within ${deps.timeoutMs} ms`)), deps.timeoutMs);
      req.on("error", (err: NodeJS.ErrnoException) => {
        const code = err.code && !err.message.includes(err.code) ? `${err.code}: ` : "";
        finish({ outcome: "failed", error: printable(`${code}${err.message}`) + tlsAdvice(err.code, host) });
      });
      req.on("response", (res) => {
        const status = res.statusCode ?? 0;
        let note = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          if (note.length < MAX_NOTE) note += chunk.slice(0, MAX_NOTE);
        });
        res.on("error", (err) => finish({ outcome: "failed", status, error: printable(`answer cut off: ${err.message}`) }));
        res.on("end", () => {
          if (status >= 200 && status < 300) finish({ outcome: "delivered", status });
          else if (status >= 300 && status < 400) {
            const to = res.headers.location ? ` to ${printable(String(res.headers.location))}` : "";
            finish({ outcome: "failed", status, error: `HTTP ${status}: redirect${to} not followed` });
          } else finish({ outcome: "failed", status, error: printable(`HTTP ${status}${note ? `: ${note}` : ""}`) });
        });
      });
      req.end(body);
    });
  }

  return {
    send,
    close(): void {
      for (const a of agents.values()) a.destroy();
      agents.clear();
    },
  };
}

export type WebhookSender = ReturnType<typeof webhookSenderFactory>;
