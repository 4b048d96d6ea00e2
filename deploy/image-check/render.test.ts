// The image check's `kubectl kustomize` (render.ts): an overlay of a folder with JSON 6902
// patches renders as kubectl does, and whatever kustomization.yaml uses that the renderer does
// not handle is refused with the file and the field named, never rendered wrong.
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { kustomize } from "./render.js";

const made: string[] = [];
afterEach(() => {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A base folder (one Deployment and a ConfigMap, namespace `ns`) and an overlay folder beside it. */
function tree(overlay: string, files: Record<string, string> = {}): string {
  const root = mkdtempSync(join(tmpdir(), "render-"));
  made.push(root);
  mkdirSync(join(root, "base"));
  mkdirSync(join(root, "overlay"));
  writeFileSync(join(root, "base", "kustomization.yaml"), "namespace: ns\nresources: [app.yaml]\nimages:\n  - name: app\n    newTag: \"1.0\"\n");
  writeFileSync(
    join(root, "base", "app.yaml"),
    [
      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {MODE: s3}",
      "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app}\nspec:\n  template:\n    spec:\n      containers:\n        - name: app\n          image: app:latest\n          env: []\n      volumes: []",
    ].join("\n---\n"),
  );
  writeFileSync(join(root, "overlay", "kustomization.yaml"), overlay);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(root, "overlay", name), text);
  return join(root, "overlay");
}

describe("kustomize (deploy/image-check/render.ts)", () => {
  it("renders a folder resource, then applies the overlay's JSON 6902 patches by kind and name, its namespace and the base's images", () => {
    const dir = tree(
      "namespace: other\nresources: [../base, claim.yaml]\npatches:\n  - path: mode.yaml\n    target: {kind: ConfigMap, name: settings}\n  - target: {kind: Deployment, name: app}\n    patch: |-\n      - op: add\n        path: /spec/template/spec/volumes/-\n        value: {name: store, persistentVolumeClaim: {claimName: store}}\n",
      {
        "mode.yaml": "- op: replace\n  path: /data/MODE\n  value: filesystem\n",
        "claim.yaml": "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: store}\nspec: {accessModes: [ReadWriteMany]}\n",
      },
    );
    const out = kustomize(dir);
    expect(out.map((o) => `${o.kind} ${o.metadata.name} ${o.metadata.namespace}`)).toEqual(["ConfigMap settings other", "Deployment app other", "PersistentVolumeClaim store other"]);
    expect(out[0]!.data).toEqual({ MODE: "filesystem" });
    expect(out[1]!.spec.template.spec.volumes).toEqual([{ name: "store", persistentVolumeClaim: { claimName: "store" } }]);
    expect(out[1]!.spec.template.spec.containers[0].image).toBe("app:1.0");
  });

  it("refuses a strategic-merge patch, a target by other fields, a target that matches nothing and a patch that does not apply", () => {
    const smp = tree("resources: [../base]\npatches:\n  - path: p.yaml\n    target: {kind: ConfigMap, name: settings}\n", { "p.yaml": "data: {MODE: filesystem}\n" });
    expect(() => kustomize(smp)).toThrow(/strategic-merge patch \(p\.yaml\).*render\.ts/);
    const label = tree("resources: [../base]\npatches:\n  - path: p.yaml\n    target: {kind: ConfigMap, labelSelector: a=b}\n", { "p.yaml": "[]\n" });
    expect(() => kustomize(label)).toThrow(/patch target other than kind and name/);
    const none = tree("resources: [../base]\npatches:\n  - path: p.yaml\n    target: {kind: ConfigMap, name: nope}\n", { "p.yaml": "[]\n" });
    expect(() => kustomize(none)).toThrow(/targets ConfigMap nope, which its resources do not define/);
    const bad = tree("resources: [../base]\npatches:\n  - path: p.yaml\n    target: {kind: ConfigMap, name: settings}\n", { "p.yaml": "- op: replace\n  path: /data/NOPE/x\n  value: 1\n" });
    expect(() => kustomize(bad)).toThrow(/p\.yaml does not apply to ConfigMap settings/);
    const field = tree("resources: [../base]\nreplicas: [{name: app, count: 3}]\n");
    expect(() => kustomize(field)).toThrow(/uses replicas, which the image check's renderer does not handle/);
    const option = tree("resources: [../base]\npatches:\n  - path: p.yaml\n    target: {kind: ConfigMap, name: settings}\n    options: {allowNameChange: true}\n", { "p.yaml": "[]\n" });
    expect(() => kustomize(option)).toThrow(/a patch with options/);
  });
});
