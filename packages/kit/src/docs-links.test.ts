import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/**
 * The operator documentation (README.md, docs/, and the READMEs beside deploy/ and bench/) links
 * only to files of this repository that exist, and to headings those files have: a moved or
 * renamed page breaks this test, not a reader's click.
 */
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

function markdownFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? markdownFiles(p) : name.endsWith(".md") ? [p] : [];
  });
}

const DOCS = [
  ...["README.md", "deploy/README.md", "bench/README.md"].map((f) => join(repoRoot, f)),
  ...(existsSync(join(repoRoot, "docs")) ? markdownFiles(join(repoRoot, "docs")) : []),
];

/** Link targets outside code: inline `[text](target)` and `<a href="target">`. */
function linksIn(text: string): string[] {
  const prose = text.replace(/^(```|~~~)[\s\S]*?^\1/gm, "").replace(/`[^`\n]*`/g, "");
  return [...prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)|<a\s[^>]*href="([^"]+)"/g)].map((m) => (m[1] ?? m[2])!);
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens. */
function anchorsOf(text: string): Set<string> {
  const prose = text.replace(/^(```|~~~)[\s\S]*?^\1/gm, "");
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of prose.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = m[1]!.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

function problemsOf(file: string, text = readFileSync(file, "utf8")): string[] {
  const where = relative(repoRoot, file);
  const problems: string[] = [];
  for (const link of linksIn(text)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(link) || link.startsWith("//")) {
      problems.push(`${where}: ${link} points outside the repository`);
      continue;
    }
    const [pathPart = "", anchor] = link.split("#", 2);
    const target = pathPart === "" ? file : resolve(dirname(file), decodeURIComponent(pathPart));
    const rel = relative(repoRoot, target);
    if (rel.startsWith("..")) {
      problems.push(`${where}: ${link} points outside the repository`);
      continue;
    }
    if (!existsSync(target)) {
      problems.push(`${where}: ${link} names ${rel}, which does not exist`);
      continue;
    }
    if (anchor && target.endsWith(".md") && !anchorsOf(readFileSync(target, "utf8")).has(anchor)) {
      problems.push(`${where}: ${link} names a heading #${anchor} that ${rel} does not have`);
    }
  }
  return problems;
}

describe("documentation links", () => {
  it("every link in the README and docs/ names an existing file or heading of the repository", () => {
    expect(DOCS.filter((f) => !existsSync(f)).map((f) => relative(repoRoot, f))).toEqual([]);
    expect(DOCS.flatMap((f) => problemsOf(f))).toEqual([]);
  });

  it("reads links the way a renderer does, and refuses ones that leave the repository", () => {
    expect(linksIn('see [a](docs/a.md#x), `[b](nope.md)`, <a href="c.md">c</a>\n```\n[d](e.md)\n```\n')).toEqual(["docs/a.md#x", "c.md"]);
    expect(anchorsOf("# Install, on Kubernetes\n## Logs\n## Logs\n")).toEqual(new Set(["install-on-kubernetes", "logs", "logs-1"]));
    const page = join(repoRoot, "docs", "page.md");
    expect(problemsOf(page, "[w](https://example.com) [p](../../etc/passwd) [m](missing.md) [r](../README.md#no-such-heading)\n")).toEqual([
      "docs/page.md: https://example.com points outside the repository",
      "docs/page.md: ../../etc/passwd points outside the repository",
      "docs/page.md: missing.md names docs/missing.md, which does not exist",
      "docs/page.md: ../README.md#no-such-heading names a heading #no-such-heading that README.md does not have",
    ]);
  });
});
