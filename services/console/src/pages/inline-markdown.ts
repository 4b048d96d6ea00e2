import { escapeHtml, Html } from "./html.js";

/**
 * The inline Markdown the settings catalog's descriptions use, as HTML: `code`, **bold** and
 * [links](https://…). Everything is escaped first, so a description can never add markup of its
 * own; a link goes only to http(s) or to a path on this server.
 */
export function inlineMarkdown(text: string): Html {
  // Code spans first, so nothing inside one is read as bold or a link.
  const parts = text.split(/(`[^`]+`)/);
  return new Html(parts.map((part) => (part.length > 2 && part.startsWith("`") && part.endsWith("`") ? `<code>${escapeHtml(part.slice(1, -1))}</code>` : prose(part))).join(""));
}

function prose(part: string): string {
  return escapeHtml(part)
    .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
    .replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, (whole, label: string, href: string) => (/^(https?:\/\/|\/|\.\.?\/|#)/.test(href) ? `<a href="${href}">${label}</a>` : whole));
}
