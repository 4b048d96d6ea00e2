import { describe, expect, it } from "vitest";
import { loadSettings } from "@svc/kit";
import { createLogger } from "@svc/kit";
import { liveSettingsFactory } from "./live-settings.js";

const SECRET = "s".repeat(32);
const start = (env: Record<string, string> = {}) => loadSettings({ argv: [], env: { SVC_INTERNAL_SECRET: SECRET, ...env } });

describe("the admin node's run-time settings", () => {
  it("answers the last values read while Postgres is away", async () => {
    let down = false;
    const store = {
      load: async () => {
        if (down) throw new Error("connection refused");
        return new Map([["svc.malware-action", "ALLOW"]]);
      },
      set: async () => {},
    };
    const live = liveSettingsFactory({ config: start(), store, log: createLogger("test", "silent").log });
    expect((await live.fresh()).malwareAction).toBe("ALLOW");
    down = true;
    expect((await live.fresh()).malwareAction).toBe("ALLOW");
    await expect(live.refresh()).rejects.toThrow("connection refused");
  });
});
