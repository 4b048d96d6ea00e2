import { describe, expect, it } from "vitest";
import { pluginGroupProblem } from "./maven-group-metadata.js";

const plugin = `<plugin>
      <name>Acme Maven Plugin</name>
      <prefix>acme</prefix>
      <artifactId>acme-maven-plugin</artifactId>
    </plugin>`;
const doc = (inner = plugin, root = "<metadata>") => `<?xml version="1.0" encoding="UTF-8"?>\n${root}\n  <plugins>\n    ${inner}\n  </plugins>\n</metadata>\n`;

describe("a group's maven-metadata.xml", () => {
  it("accepts the plugin list Maven writes, with its namespace, a comment and escaped text", () => {
    expect(pluginGroupProblem(doc())).toBeUndefined();
    expect(pluginGroupProblem(doc(`${plugin}<!-- two -->${plugin.replace("acme", "a&amp;b &#x41;")}`))).toBeUndefined();
    expect(pluginGroupProblem(doc(plugin, `<metadata xmlns="http://maven.apache.org/METADATA/1.1.0" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" modelVersion="1.1.0">`))).toBeUndefined();
    expect(pluginGroupProblem("<metadata><plugins></plugins></metadata>")).toBeUndefined();
  });

  it.each([
    ["an XHTML script", doc(`${plugin}<script xmlns="http://www.w3.org/1999/xhtml">alert(1)</script>`), /<plugins> holds <script>/],
    ["an element inside a field", doc(plugin.replace("acme</prefix>", `<x:script xmlns:x="http://www.w3.org/1999/xhtml">fetch('/')</x:script></prefix>`)), /not closed|holds/],
    ["an attribute on a plugin", doc(plugin.replace("<plugin>", `<plugin onload="alert(1)">`)), /has an attribute/],
    ["an attribute on the root", doc(plugin, `<metadata xmlns:h="http://www.w3.org/1999/xhtml" h:onload="x">`), /has the attribute xmlns:h/],
    ["a processing instruction", doc().replace("<metadata>", `<?xml-stylesheet href="x.xsl"?><metadata>`), /processing instruction/],
    ["a DOCTYPE with an entity", `<!DOCTYPE metadata [<!ENTITY x "y">]>${doc().slice(doc().indexOf("<metadata>"))}`, /DOCTYPE/],
    ["an undeclared entity", doc(plugin.replace("acme</prefix>", "&x;</prefix>")), /entity reference/],
    ["CDATA", doc(plugin.replace("acme</prefix>", "<![CDATA[<script>]]></prefix>")), /CDATA|holds/],
    ["another root", doc(plugin, "<html>").replace("</metadata>", "</html>"), /root element is <html>/],
    ["versioning beside plugins", doc().replace("<plugins>", "<versioning><latest>1</latest></versioning><plugins>"), /holds <versioning>/],
    ["a plugin without a prefix", doc(plugin.replace(/<prefix>.*<\/prefix>/, "")), /lacks/],
    ["text between elements", doc(`hello ${plugin}`), /holds text/],
    ["a document cut short", doc().slice(0, -20), /not closed/],
    ["something after the root", `${doc()}<script/>`, /after <\/metadata>/],
    ["a mismatched end tag", doc(plugin.replace("</name>", "</nam>")), /not closed where/],
  ])("refuses %s", (_what, text, why) => {
    expect(pluginGroupProblem(text)).toMatch(why);
  });
});
