import { describe, expect, it } from "vitest";
import { inlineMarkdown } from "./inline-markdown.js";

describe("a setting's description", () => {
  it("renders code spans, bold and links", () => {
    expect(inlineMarkdown("`true`: **refuse** writes; see [the guide](https://example.com/a?b=1&c=2).").text).toBe(
      '<code>true</code>: <strong>refuse</strong> writes; see <a href="https://example.com/a?b=1&amp;c=2">the guide</a>.',
    );
  });

  it("never lets markup through, inside or outside code, nor a script link", () => {
    const out = inlineMarkdown('<img src=x onerror=alert(1)> `<script>` **<b>x</b>** [x](javascript:alert(1)) [y](" onclick="z)').text;
    expect(out).not.toMatch(/<img|<script|<b>|href="javascript|onclick="/);
    expect(out).toContain("&lt;img src=x onerror=alert(1)&gt;");
    expect(out).toContain("<code>&lt;script&gt;</code>");
    expect(out).toContain("<strong>&lt;b&gt;x&lt;/b&gt;</strong>");
    expect(out).toContain("[x](javascript:alert(1))");
  });

  it("leaves ** inside a code span as it is", () => {
    expect(inlineMarkdown("`a **b** c`").text).toBe("<code>a **b** c</code>");
  });
});
