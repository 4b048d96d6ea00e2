import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uploadForm } from "./pypi-clients.js";
import { exportCalls } from "./export-harness.js";
import { freshName as fresh, startSuite, type Suite } from "./suite.js";
import { collectArtifactEvents } from "./upstream.js";

const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");

interface SimpleFile {
  filename: string;
  url: string;
  hashes: { sha256: string };
  "requires-python"?: string;
  yanked: boolean | string;
  "upload-time": string;
}

/**
 * Exporting a pypi repository into another: the target's simple index lists each copied file
 * with its digest, requires-python and yanked state, and serves it; twine's uploads are sent
 * here as the form twine sends, through the gateway with a key.
 */
describe("exporting a pypi repository", () => {
  let s: Suite;
  let admin: string;
  let deployer: string;
  beforeAll(async () => {
    s = await startSuite();
    admin = s.bootstrapKey;
    deployer = (await s.mint({ label: "ci", grants: [{ scope: "*", tokens: ["deploy"] }] })).key;
  });
  afterAll(async () => {
    await s?.stop();
  });

  const basic = (key: string) => ({ authorization: `Basic ${Buffer.from(`__token__:${key}`).toString("base64")}` });
  const upload = async (repo: string, name: string, version: string, filename: string, content: Buffer, requiresPython?: string) => {
    const fields = { name, version, sha256_digest: sha256(content), ...(requiresPython ? { requires_python: requiresPython } : {}) };
    const form = uploadForm(fields, { name: filename, content });
    const r = await s.call("POST", `/repository/${repo}/`, { headers: { ...basic(deployer), "content-type": form.contentType }, body: form.body });
    expect(r.status, await r.text()).toBe(200);
  };
  const { exportAndWait } = exportCalls(() => s, () => admin);
  const page = async (repo: string, project: string) => {
    const r = await s.call("GET", `/repository/${repo}/simple/${project}/`, { headers: { ...basic(deployer), accept: "application/vnd.pypi.simple.v1+json" } });
    expect(r.status).toBe(200);
    return ((await r.json()) as { files: SimpleFile[] }).files;
  };

  it("copies every file with its requires-python and yanked state, skips the same file, refuses other content under a taken file name", async () => {
    const source = fresh("py-src");
    const target = fresh("py-dst");
    await s.createRepository(source, "pypi");
    await s.createRepository(target, "pypi");
    const wheel10 = randomBytes(2048);
    const sdist10 = randomBytes(3000);
    const wheel11 = randomBytes(1024);
    const other = randomBytes(512);
    await upload(source, "Acme.Tool", "1.0", "acme_tool-1.0-py3-none-any.whl", wheel10, ">=3.8");
    await upload(source, "Acme.Tool", "1.0", "acme_tool-1.0.tar.gz", sdist10, ">=3.8");
    await upload(source, "Acme.Tool", "1.1", "acme_tool-1.1-py3-none-any.whl", wheel11);
    await upload(source, "other", "1.0", "other-1.0-py3-none-any.whl", other);
    const yank = await s.call("POST", `/api/repositories/${source}/pypi/yank`, { key: admin, body: { project: "acme-tool", version: "1.1", yanked: true, reason: "broken <build>" } });
    expect(yank.status).toBe(200);
    await upload(target, "Acme.Tool", "1.0", "acme_tool-1.0-py3-none-any.whl", wheel10, ">=3.8");
    await upload(target, "other", "1.0", "other-1.0-py3-none-any.whl", randomBytes(512));

    const events = await collectArtifactEvents(s.natsUrl, s.tenant, (e) => e.repository === target && e.kind === "artifact.published");
    try {
      const r = await exportAndWait(source, target);
      expect(r).toMatchObject({ state: "done", format: "pypi", copied: 2, skipped: 1, refused: 1, detail: null });
      expect(r.refusals).toEqual([{ path: "packages/other/1.0/other-1.0-py3-none-any.whl", reason: expect.stringMatching(/^File already exists/) }]);

      const files = await page(target, "acme-tool");
      expect(files.map((f) => [f.filename, f.hashes.sha256, f["requires-python"] ?? null, f.yanked])).toEqual([
        ["acme_tool-1.0-py3-none-any.whl", sha256(wheel10), ">=3.8", false],
        ["acme_tool-1.0.tar.gz", sha256(sdist10), ">=3.8", false],
        ["acme_tool-1.1-py3-none-any.whl", sha256(wheel11), null, "broken <build>"],
      ]);
      // A copied file's entry is the source's, upload time included; the one skipped is the target's own.
      const [sourceWheel, ...copied] = await page(source, "acme-tool");
      expect(files.slice(1)).toEqual(copied);
      expect({ ...files[0], "upload-time": undefined }).toEqual({ ...sourceWheel, "upload-time": undefined });
      const html = await (await s.call("GET", `/repository/${target}/simple/acme-tool/`, { headers: basic(deployer) })).text();
      expect(html).toContain(`#sha256=${sha256(sdist10)}`);
      expect(html).toContain('data-yanked="broken &lt;build&gt;"');
      // Each link resolves against its page to the copied bytes.
      for (const [f, bytes] of [[files[1]!, sdist10], [files[2]!, wheel11]] as const) {
        const got = await s.call("GET", new URL(f.url, `${s.gatewayUrl}/repository/${target}/simple/acme-tool/`).pathname, { headers: basic(deployer) });
        expect(got.status).toBe(200);
        expect(Buffer.from(await got.arrayBuffer()).equals(bytes)).toBe(true);
      }
      // The other project keeps the target's own file.
      expect((await page(target, "other")).map((f) => f.hashes.sha256)).not.toContain(sha256(other));
      // Each copy is an upload's event, with the PyPI coordinates.
      const copiedFiles = new Set(["acme_tool-1.0.tar.gz", "acme_tool-1.1-py3-none-any.whl"]);
      const ofCopies = (es: { package?: { file: string } }[]) => es.filter((e) => copiedFiles.has(e.package?.file ?? ""));
      const got = ofCopies(await events.until("both copies' events", (es) => ofCopies(es).length >= 2));
      expect(got.map((e) => e.package).sort((a, b) => String(a?.file).localeCompare(String(b?.file)))).toEqual([
        { format: "pypi", name: "acme-tool", version: "1.0", file: "acme_tool-1.0.tar.gz" },
        { format: "pypi", name: "acme-tool", version: "1.1", file: "acme_tool-1.1-py3-none-any.whl" },
      ]);

      expect(await exportAndWait(source, target)).toMatchObject({ state: "done", copied: 0, skipped: 3, refused: 1 });
    } finally {
      await events.close();
    }
  });
});
