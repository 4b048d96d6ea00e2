import { escapeHtml, Html } from "../html.js";
import { inlineMarkdown } from "../inline-markdown.js";

/** The most characters of a readme rendered (npm keeps up to 64 Ki of one). */
const MAX_CHARS = 65_536;

/**
 * A package's readme (Markdown as its author published it) as HTML the console can show: the
 * block structure people write (headings, paragraphs, lists, fenced code, quotes) with
 * inlineMarkdown's spans inside. Every character of the source is escaped before any markup is
 * added, so raw HTML in a readme (a `<script>`, an `<img onerror>`) shows as text and never runs;
 * links go only to http(s) or this server. Images are not loaded (the console's CSP allows its
 * own files only): their alt text shows.
 */
export function renderReadme(markdown: string): Html {
  const lines = markdown.slice(0, MAX_CHARS).replace(/\r\n?/g, "\n").split("\n");
  const out: string[] = [];
  let para: string[] = [];
  let list: { tag: "ul" | "ol"; items: string[] } | undefined;
  const inline = (text: string) => inlineMarkdown(text.replace(/!\[([^\]]*)\]\([^)]*\)/g, "$1")).text;
  const flush = () => {
    if (para.length) out.push(`<p>${inline(para.join(" "))}</p>`);
    para = [];
    if (list) out.push(`<${list.tag}>${list.items.map((i) => `<li>${inline(i)}</li>`).join("")}</${list.tag}>`);
    list = undefined;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const fence = /^\s*(```|~~~)/.exec(line);
    if (fence) {
      flush();
      const code: string[] = [];
      while (++i < lines.length && !lines[i]!.trimStart().startsWith(fence[1]!)) code.push(lines[i]!);
      out.push(`<pre><code>${escapeHtml(code.join("\n"))}</code></pre>`);
      continue;
    }
    const heading = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      flush();
      // h1 and h2 belong to the page: a readme's own headings start at h3.
      const level = Math.min(6, heading[1]!.length + 2);
      out.push(`<h${level}>${inline(heading[2]!)}</h${level}>`);
      continue;
    }
    const item = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(line);
    if (item) {
      const tag = /\d/.test(item[1]!) ? "ol" : "ul";
      if (para.length || (list && list.tag !== tag)) flush();
      list ??= { tag, items: [] };
      list.items.push(item[2]!);
      continue;
    }
    const quote = /^\s*>\s?(.*)$/.exec(line);
    if (quote) {
      flush();
      out.push(`<blockquote><p>${inline(quote[1]!)}</p></blockquote>`);
      continue;
    }
    if (line.trim() === "" || /^\s*([-*_])\s*\1\s*\1[\s\-*_]*$/.test(line)) {
      flush();
      continue;
    }
    if (list) flush();
    para.push(line.trim());
  }
  flush();
  return new Html(out.join("\n"));
}
