import { describe, expect, it } from "vitest";
import { maskUrl, maskUrlsIn } from "./masked-url.js";

describe("a webhook URL as shown", () => {
  it("keeps the scheme, host and port and masks the path and query, where tokens travel", () => {
    expect(maskUrl("https://hooks.slack.com/services/T000/B000/XXXXSECRET")).toBe("https://hooks.slack.com/…");
    expect(maskUrl("https://example.com/?token=SECRET")).toBe("https://example.com/…");
    expect(maskUrl("http://127.0.0.1:8080/hook")).toBe("http://127.0.0.1:8080/…");
    expect(maskUrl("https://[::1]:9/x")).toBe("https://[::1]:9/…");
    expect(maskUrl("https://example.com")).toBe("https://example.com/");
    expect(maskUrl("https://user:hunter2@example.com/")).toBe("https://example.com/");
    expect(maskUrl("not a url /with/SECRET")).toBe("…");
  });

  it("masks every URL a line quotes and leaves the rest", () => {
    expect(maskUrlsIn("https://discord.com/api/webhooks/1/SECRET none; https://a.example/?token=SECRET published")).toBe(
      "https://discord.com/… none; https://a.example/… published",
    );
  });
});
