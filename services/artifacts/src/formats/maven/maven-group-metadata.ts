/**
 * A group's `maven-metadata.xml` (`<groupId as folders>/maven-metadata.xml`): the list of the
 * group's Maven plugins and their prefixes, which a plugin deploy sends and the server keeps as
 * it came. Kept bytes are served back, so the document must be exactly what it claims to be:
 *
 *   <?xml version="1.0" encoding="UTF-8"?>
 *   <metadata>
 *     <plugins>
 *       <plugin><name>…</name><prefix>…</prefix><artifactId>…</artifactId></plugin>
 *     </plugins>
 *   </metadata>
 *
 * Anything else is refused: another element or attribute (XHTML, a script), a processing
 * instruction, a DOCTYPE or an entity other than XML's five and character references, CDATA,
 * text outside the three leaf elements, a document that is not well-formed. Comments and white
 * space between elements are allowed, as any XML writer may add them.
 */

/** Attributes Maven's writers put on the root (namespace and schema, the model version). */
const ROOT_ATTRIBUTES = new Set(["xmlns", "xmlns:xsi", "xsi:schemaLocation", "modelVersion"]);
const PLUGIN_FIELDS = new Set(["name", "prefix", "artifactId"]);
const XML_DECLARATION = /^<\?xml\s+version\s*=\s*(["'])1\.[01]\1(\s+encoding\s*=\s*(["'])[A-Za-z][\w.-]*\3)?(\s+standalone\s*=\s*(["'])(yes|no)\5)?\s*\?>/;
const REFERENCE = /^&(?:amp|lt|gt|quot|apos|#[0-9]{1,7}|#x[0-9a-fA-F]{1,6});/;
/** Characters XML 1.0 forbids in a document (C0 controls other than tab, newline, return). */
const FORBIDDEN_CHARACTER = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/;
const NAME = /^[A-Za-z_][\w.-]*(?::[A-Za-z_][\w.-]*)?/;

class Refused extends Error {}

/** Undefined when `text` is a group's plugin list as described above; else why it is not. */
export function pluginGroupProblem(text: string): string | undefined {
  try {
    checkPluginGroup(text);
    return undefined;
  } catch (err) {
    if (err instanceof Refused) return err.message;
    throw err;
  }
}

function checkPluginGroup(text: string): void {
  if (FORBIDDEN_CHARACTER.test(text)) throw new Refused("it holds a control character XML does not allow");
  let at = text.startsWith("\uFEFF") ? 1 : 0;
  const refuse = (why: string): never => {
    throw new Refused(why);
  };

  /** White space and comments; a processing instruction, DOCTYPE or CDATA section is refused where met. */
  const skipMisc = () => {
    for (;;) {
      while (at < text.length && " \t\r\n".includes(text[at]!)) at++;
      if (text.startsWith("<!--", at)) {
        const end = text.indexOf("-->", at + 4);
        if (end < 0 || text.slice(at + 4, end).includes("--")) refuse("a comment is not well-formed");
        at = end + 3;
        continue;
      }
      if (text.startsWith("<?", at)) refuse("it holds a processing instruction");
      if (text.startsWith("<!", at)) refuse("it holds a DOCTYPE, an entity declaration or a CDATA section");
      return;
    }
  };

  /** Text up to the next `<`: references XML predefines only, nothing else that needs escaping. */
  const readText = (): string => {
    const from = at;
    while (at < text.length && text[at] !== "<") {
      if (text[at] === "&") {
        const ref = REFERENCE.exec(text.slice(at, at + 12));
        if (!ref) refuse("it holds an entity reference other than &amp; &lt; &gt; &quot; &apos; or a character reference");
        at += ref![0].length;
      } else if (text[at] === ">" && text.startsWith("]]>", at - 2)) {
        refuse("it holds ]]> in text");
      } else at++;
    }
    return text.slice(from, at);
  };

  /** A start tag `<name …>` (its attributes read and checked by `attribute`); returns its name. */
  const startTag = (attribute: (name: string) => void): string => {
    if (text[at] !== "<") refuse("it is not well-formed (an element was expected)");
    at++;
    const name = NAME.exec(text.slice(at, at + 200))?.[0] ?? refuse("it is not well-formed (an element name was expected)");
    at += name.length;
    const seen = new Set<string>();
    for (;;) {
      const spaced = /^[ \t\r\n]*/.exec(text.slice(at))![0].length;
      at += spaced;
      if (text[at] === ">") {
        at++;
        return name;
      }
      if (text.startsWith("/>", at)) refuse(`<${name}/> is empty`);
      if (spaced === 0) refuse(`the start tag of <${name}> is not well-formed`);
      const attr = NAME.exec(text.slice(at, at + 200))?.[0] ?? refuse(`the start tag of <${name}> is not well-formed`);
      at += attr.length;
      const value = /^[ \t\r\n]*=[ \t\r\n]*(?:"([^"<]*)"|'([^'<]*)')/.exec(text.slice(at));
      if (!value) refuse(`the attribute ${attr} of <${name}> is not well-formed`);
      if (seen.has(attr)) refuse(`<${name}> has the attribute ${attr} twice`);
      seen.add(attr);
      const v = value![1] ?? value![2]!;
      if (/&(?!(?:amp|lt|gt|quot|apos|#[0-9]{1,7}|#x[0-9a-fA-F]{1,6});)/.test(v)) refuse(`the attribute ${attr} of <${name}> holds an entity reference XML does not predefine`);
      attribute(attr);
      at += value![0].length;
    }
  };

  const endTag = (name: string) => {
    const close = new RegExp(`^</${name}[ \\t\\r\\n]*>`).exec(text.slice(at, at + name.length + 40));
    if (!close) refuse(`<${name}> is not closed where it should be`);
    at += close![0].length;
  };

  const noAttributes = (element: string) => (attr: string) => refuse(`<${element}> has an attribute (${attr}): a plugin list has none there`);

  /** Content of an element that holds only elements: each child's name is checked by `child`, which reads it. */
  const children = (parent: string, child: (name: string) => void) => {
    for (;;) {
      skipMisc();
      if (text.startsWith("</", at)) return endTag(parent);
      if (at >= text.length) refuse(`<${parent}> is not closed`);
      if (text[at] !== "<") refuse(`<${parent}> holds text: a plugin list holds only elements there`);
      const save = at;
      at++;
      const name = NAME.exec(text.slice(at, at + 200))?.[0] ?? refuse("it is not well-formed (an element name was expected)");
      at = save;
      child(name);
    }
  };

  if (text.startsWith("<?xml", at)) {
    const decl = XML_DECLARATION.exec(text.slice(at));
    if (!decl) refuse("its XML declaration is not well-formed");
    at += decl![0].length;
  }
  skipMisc();
  const root = startTag((attr) => {
    if (!ROOT_ATTRIBUTES.has(attr)) refuse(`<metadata> has the attribute ${attr}: a plugin list has only ${[...ROOT_ATTRIBUTES].join(", ")}`);
  });
  if (root !== "metadata") refuse(`its root element is <${root}>, not <metadata>`);
  let plugins = 0;
  children("metadata", (name) => {
    if (name !== "plugins") refuse(`<metadata> holds <${name}>: a group's maven-metadata.xml holds only <plugins>`);
    if (++plugins > 1) refuse("<metadata> holds <plugins> twice");
    startTag(noAttributes("plugins"));
    children("plugins", (name) => {
      if (name !== "plugin") refuse(`<plugins> holds <${name}>: it holds only <plugin> elements`);
      startTag(noAttributes("plugin"));
      const fields = new Set<string>();
      children("plugin", (field) => {
        if (!PLUGIN_FIELDS.has(field)) refuse(`<plugin> holds <${field}>: it holds only <name>, <prefix> and <artifactId>`);
        if (fields.has(field)) refuse(`<plugin> holds <${field}> twice`);
        fields.add(field);
        startTag(noAttributes(field));
        readText();
        if (text.startsWith("<![CDATA[", at)) refuse(`<${field}> holds a CDATA section`);
        if (text[at] === "<" && text[at + 1] !== "/") refuse(`<${field}> holds markup: it holds only text`);
        endTag(field);
      });
      if (!fields.has("prefix") || !fields.has("artifactId")) refuse("a <plugin> lacks its <prefix> or <artifactId>");
    });
  });
  if (plugins === 0) refuse("<metadata> holds no <plugins>");
  skipMisc();
  if (at < text.length) refuse("it holds something after </metadata>");
}
