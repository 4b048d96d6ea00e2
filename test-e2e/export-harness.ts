import type { ExportView } from "@svc/contracts";
import { expect } from "vitest";
import type { Suite } from "./suite.js";
import { eventually } from "./upstream.js";

/**
 * Starting an export through the admin API with `key`, and waiting for its end, as a client would.
 * Getters, since a test file builds its suite and keys in beforeAll, after these are declared.
 */
export function exportCalls(suite: () => Suite, key: () => string) {
  /** 202 with the record, and the record's address in Location. */
  const start = async (source: string, target: string): Promise<ExportView> => {
    const res = await suite().call("POST", `/api/repositories/${source}/export`, { key: key(), body: { target } });
    expect(res.status, await res.clone().text()).toBe(202);
    const r = (await res.json()) as ExportView;
    expect(res.headers.get("location")).toBe(`/api/repositories/${source}/exports/${r.id}`);
    return r;
  };
  const read = async (source: string, id: string) => (await (await suite().call("GET", `/api/repositories/${source}/exports/${id}`, { key: key() })).json()) as ExportView;
  /** The record once the export is no longer running. */
  const ended = (source: string, id: string) =>
    eventually(`export ${id} ended`, async () => {
      const r = await read(source, id);
      return r.state === "running" ? undefined : r;
    });
  const exportAndWait = async (source: string, target: string) => ended(source, (await start(source, target)).id);
  return { start, read, ended, exportAndWait };
}
