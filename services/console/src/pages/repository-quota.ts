import { bytesText, parseByteSize } from "@svc/contracts";
import { html, type Html } from "./html.js";
import { expectOk, type PageContext, type PageOutcome } from "./page-contract.js";
import { actionForm, field, inputRefusal, seg } from "./page-widgets.js";
import { repositoryPath } from "./repository-view.js";

/**
 * A repository's storage quota on its page and on the Create form (docs/administration/
 * repositories.md, "Quotas"): what it uses of it, and the form that sets it through
 * `PATCH /api/repositories/<name>` (`quotaBytes`; blank removes it).
 */

/** What the API shows of a repository's quota (`GET /api/repositories/<name>`). */
export interface QuotaFields {
  name: string;
  type?: string;
  quotaBytes?: number | null;
  usedBytes?: number;
}

/** A size as a person types it ("500 MiB", "10GB", "1048576") in bytes; blank: null (no quota); undefined: not a size. */
export const parseSize = (typed: string): number | null | undefined => (typed.trim() === "" ? null : parseByteSize(typed));
const sizeText = bytesText;

/** "1.2 GiB of 5.0 GiB (24%)", "over its quota" when it is, or the usage alone without one. */
export function usageText(r: QuotaFields): string {
  const used = r.usedBytes ?? 0;
  if (r.quotaBytes === null || r.quotaBytes === undefined) return `${sizeText(used)} (no quota)`;
  const pct = Math.floor((used / r.quotaBytes) * 100);
  return `${sizeText(used)} of ${sizeText(r.quotaBytes)} (${pct}%)${used > r.quotaBytes ? ": over its quota, what adds to it is refused" : ""}`;
}

const HINT = "bytes, or with a unit: 500 MiB, 10 GiB, 2 TB; blank: no quota";

/** The Create form's quota field (its value kept after a refusal). */
export function createQuotaField(value: string): Html {
  return field({ id: "create-quota", name: "quota", label: "Storage quota", value, placeholder: "10 GiB", hint: `${HINT}. A publish over it is refused (413); a proxy evicts what has gone longest unused instead` });
}

/** The quota a Create form asks for: `quotaBytes` for the body, nothing when blank, or why the console will not send it. */
export function createQuota(form: Record<string, string>): { quotaBytes?: number } | { problem: string } {
  const bytes = parseSize(form.quota ?? "");
  if (bytes === undefined) return { problem: `the storage quota must be a size (${HINT})` };
  return bytes === null ? {} : { quotaBytes: bytes };
}

/** "Storage" on a hosted or proxy repository's page: its usage, and the form that sets its quota. */
export function quotaSection(ctx: PageContext, detail: QuotaFields): Html | "" {
  if (detail.type === "group") return "";
  const current = detail.quotaBytes ?? null;
  return html`<section aria-labelledby="quota-heading" id="quota">
    <h2 id="quota-heading">Storage</h2>
    <p>Used: <strong id="quota-usage">${usageText(detail)}</strong>.</p>
    <p>${
      detail.type === "proxy"
        ? "A fetch that takes this proxy over its quota is served and stored; the cached files that have gone longest without a download are then removed until it fits."
        : "A publish that would take the repository over its quota is refused (413, with the reason the client prints) and stores nothing."
    }</p>
    ${actionForm(ctx, {
      to: repositoryPath(detail.name),
      action: "set-quota",
      button: "Save quota",
      controls: field({ id: "quota-bytes", name: "quota", label: "Storage quota", value: current === null ? "" : String(current), placeholder: "10 GiB", hint: HINT }),
    })}
  </section>`;
}

/** The `set-quota` form post. */
export async function setQuota(ctx: PageContext, name: string): Promise<PageOutcome> {
  const bytes = parseSize(ctx.form.quota ?? "");
  if (bytes === undefined) return { kind: "redirect", location: repositoryPath(name), notice: `Not done: the storage quota must be a size (${HINT})` };
  const res = await ctx.api<QuotaFields>("PATCH", `/api/repositories/${seg(name)}`, { quotaBytes: bytes });
  const why = inputRefusal(res);
  if (why !== undefined) return { kind: "redirect", location: repositoryPath(name), notice: `Not done: ${why}` };
  const r = expectOk(res);
  return { kind: "redirect", location: repositoryPath(name), notice: r.quotaBytes ? `Storage quota of ${name} set: ${usageText(r)}` : `Storage quota of ${name} removed` };
}
