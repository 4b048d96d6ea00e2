// The manifests of deploy/kubernetes (or of its overlay deploy/kubernetes-filesystem) as
// `kubectl kustomize` renders them, and the same objects
// adapted to what `podman kube play` (podman 4.3, Debian bookworm) runs. The adaptation lives
// here, never in the manifests: podman ignores Services (so every Deployment's pods get the
// Service's name as a network alias, see run.ts), turns a probe's named port into 0, publishes every
// containerPort on the host, takes
// Secrets only as JSON and has no NetworkPolicy or PodDisruptionBudget.
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import jsonpatch, { type Operation } from "fast-json-patch";
import { parseAllDocuments, parse as parseYaml, stringify } from "yaml";

export type Obj = Record<string, any>;

/** The fields of kustomization.yaml this renderer understands; any other is refused, not ignored. */
const KNOWN_FIELDS = new Set(["apiVersion", "kind", "namespace", "resources", "patches", "images"]);
/** The fields of a `patches` entry and of its target this renderer understands. */
const KNOWN_PATCH_FIELDS = new Set(["path", "patch", "target"]);
const KNOWN_TARGET_FIELDS = new Set(["kind", "name"]);
const CLUSTER_SCOPED = new Set(["Namespace", "PersistentVolume", "ClusterRole", "ClusterRoleBinding", "StorageClass"]);

/**
 * `kubectl kustomize <dir>` for what deploy/kubernetes and its overlay deploy/kubernetes-filesystem
 * use: its resources (files, or a folder with a kustomization.yaml of its own, rendered first),
 * its `patches` that are JSON 6902 patches aimed by kind and name (applied with fast-json-patch;
 * a strategic-merge patch, a target by other fields or one that matches nothing is refused), the
 * namespace set on every namespaced object (and the Namespace renamed), and its images entries
 * applied to every container's image.
 */
export function kustomize(dir: string): Obj[] {
  const where = join(dir, "kustomization.yaml");
  const k = parseYaml(readFileSync(where, "utf8")) as Obj;
  const refuse = (what: string): never => {
    throw new Error(`${where} uses ${what}, which the image check's renderer does not handle (deploy/image-check/render.ts)`);
  };
  const unknown = Object.keys(k).filter((f) => !KNOWN_FIELDS.has(f));
  if (unknown.length > 0) refuse(unknown.join(", "));
  const images = (k.images ?? []) as { name: string; newName?: string; newTag?: string }[];
  const out: Obj[] = [];
  for (const entry of (k.resources ?? []) as string[]) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) {
      out.push(...kustomize(path));
      continue;
    }
    for (const doc of parseAllDocuments(readFileSync(path, "utf8"))) {
      if (doc.errors.length > 0) throw new Error(`${entry}: ${doc.errors[0]!.message}`);
      const obj = doc.toJS() as Obj | null;
      if (obj) out.push(obj);
    }
  }
  for (const p of (k.patches ?? []) as Obj[]) {
    const extra = Object.keys(p).filter((f) => !KNOWN_PATCH_FIELDS.has(f));
    if (extra.length > 0) refuse(`a patch with ${extra.join(", ")}`);
    const target = (p.target ?? {}) as Obj;
    const extraTarget = Object.keys(target).filter((f) => !KNOWN_TARGET_FIELDS.has(f));
    if (!target.kind || !target.name || extraTarget.length > 0) refuse(`a patch target other than kind and name (${JSON.stringify(target)})`);
    if ((p.path === undefined) === (p.patch === undefined)) refuse(`a patch with ${p.path === undefined ? "neither path nor patch" : "both path and patch"}`);
    const ops = parseYaml(p.path !== undefined ? readFileSync(join(dir, p.path), "utf8") : p.patch) as unknown;
    if (!Array.isArray(ops)) refuse(`a strategic-merge patch (${p.path ?? "inline"}); only JSON 6902 patches (a list of operations) are handled`);
    const matches = out.map((o, i) => [o, i] as const).filter(([o]) => o.kind === target.kind && o.metadata?.name === target.name);
    if (matches.length === 0) throw new Error(`${where}: the patch ${p.path ?? "(inline)"} targets ${target.kind} ${target.name}, which its resources do not define`);
    for (const [o, i] of matches) {
      try {
        out[i] = jsonpatch.applyPatch(o, ops as Operation[], true, false).newDocument;
      } catch (err) {
        throw new Error(`${where}: the patch ${p.path ?? "(inline)"} does not apply to ${target.kind} ${target.name}: ${(err as Error).message.split("\n")[0]}`);
      }
    }
  }
  for (const obj of out) {
    if (k.namespace) {
      if (obj.kind === "Namespace") obj.metadata.name = k.namespace;
      else if (!CLUSTER_SCOPED.has(obj.kind)) obj.metadata.namespace = k.namespace;
    }
    for (const c of obj.spec?.template?.spec?.containers ?? []) {
      const [name, tag] = splitImage(c.image);
      const entry = images.find((i) => i.name === name);
      if (entry) c.image = `${entry.newName ?? name}:${entry.newTag ?? tag ?? "latest"}`;
    }
  }
  return out;
}

function splitImage(image: string): [string, string | undefined] {
  const at = image.lastIndexOf(":");
  return at > image.lastIndexOf("/") ? [image.slice(0, at), image.slice(at + 1)] : [image, undefined];
}

export interface PodmanOptions {
  /** The image every container runs (replaces the kustomization's). */
  image: string;
  /** The Secret svc-secrets' values, by key. */
  secret: Record<string, string>;
  /** Replicas per Deployment; undefined keeps the manifests' counts. */
  replicas?: number;
  /** A label put on every pod, so the check finds and removes exactly what it started. */
  label: [string, string];
}

export interface PodmanPlan {
  /** The YAML for `podman kube play`: the Deployments, self-contained. */
  yaml: string;
  /** Deployment name → its replicas: podman names the pods `<name>-pod-<i>`. */
  deployments: Map<string, number>;
  /** The PersistentVolumeClaims the Deployments mount: created as podman volumes beforehand. */
  claims: string[];
}

/**
 * The rendered objects as podman 4.3 runs them: only the Deployments, each container's
 * `envFrom` ConfigMap and `secretKeyRef`s resolved to literal values (an optional key that is
 * absent is left out, as Kubernetes does), named probe ports resolved to numbers and the
 * container ports dropped (podman would publish them on the host), the service account left
 * out, the image and the replicas set. Everything else of the manifests (commands, security contexts,
 * read-only root, volumes, resources, probes) is kept as written.
 */
export function forPodman(objects: Obj[], opts: PodmanOptions): PodmanPlan {
  const configMaps = new Map(objects.filter((o) => o.kind === "ConfigMap").map((o) => [o.metadata.name as string, (o.data ?? {}) as Record<string, string>]));
  const deployments = new Map<string, number>();
  const claims = new Set<string>();
  const docs: Obj[] = [];
  for (const d of objects.filter((o) => o.kind === "Deployment")) {
    const name = d.metadata.name as string;
    const replicas = opts.replicas ?? d.spec.replicas ?? 1;
    deployments.set(name, replicas);
    d.spec.replicas = replicas;
    d.spec.template.metadata.labels = { ...d.spec.template.metadata.labels, [opts.label[0]]: opts.label[1] };
    const pod = d.spec.template.spec;
    // podman has no service accounts (svc-storage is the bucket's web identity, which the
    // filesystem variant the check runs does not use).
    delete pod.serviceAccountName;
    for (const v of pod.volumes ?? []) if (v.persistentVolumeClaim) claims.add(v.persistentVolumeClaim.claimName);
    for (const c of pod.containers) {
      c.image = opts.image;
      c.imagePullPolicy = "Never";
      const env: { name: string; value: string }[] = [];
      for (const from of c.envFrom ?? []) {
        const data = configMaps.get(from.configMapRef?.name);
        if (!data) throw new Error(`Deployment ${name}: envFrom names ${JSON.stringify(from)}, which the manifests do not define`);
        for (const [k, v] of Object.entries(data)) env.push({ name: k, value: v });
      }
      // An env entry wins over envFrom (Kubernetes' rule).
      const set = (k: string, v: string) => {
        const i = env.findIndex((e) => e.name === k);
        if (i >= 0) env.splice(i, 1);
        env.push({ name: k, value: v });
      };
      // The pod's own address (status.podIP) is known only once podman started it: the variable
      // and those naming it (`$(POD_IP)`) are left out, and the service derives its address itself
      // (svc.artifacts.node-url's default: its first non-loopback address). Other `$(NAME)`s are
      // expanded from the variables before them, as Kubernetes does.
      const unknown = new Set<string>();
      for (const e of c.env ?? []) {
        if (e.value !== undefined) {
          const named = [...String(e.value).matchAll(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g)].map((m) => m[1]!);
          if (!named.some((n) => unknown.has(n))) set(e.name, named.reduce((v, n) => v.replaceAll(`$(${n})`, env.find((x) => x.name === n)?.value ?? `$(${n})`), String(e.value)));
        } else if (e.valueFrom?.fieldRef?.fieldPath === "status.podIP") unknown.add(e.name);
        else if (e.valueFrom?.secretKeyRef) {
          const ref = e.valueFrom.secretKeyRef;
          const v = opts.secret[ref.key];
          if (v !== undefined) set(e.name, v);
          else if (!ref.optional) throw new Error(`Deployment ${name}: ${e.name} needs the Secret's key ${ref.key}, which the check does not provide`);
        } else throw new Error(`Deployment ${name}: ${e.name} is set in a way the check does not resolve (${JSON.stringify(e.valueFrom)})`);
      }
      delete c.envFrom;
      c.env = env;
      for (const kind of ["startupProbe", "livenessProbe", "readinessProbe"]) {
        const get = c[kind]?.httpGet;
        if (get && typeof get.port === "string") {
          const port = (c.ports ?? []).find((p: Obj) => p.name === get.port)?.containerPort;
          if (port === undefined) throw new Error(`Deployment ${name}: ${kind} names port ${get.port}, which the container does not have`);
          get.port = port;
        }
      }
      // podman 4.3 publishes every containerPort on the host (as if hostPort were set), so the
      // seven pods' 8080 would collide there; the pods reach each other on the check's network,
      // which needs no published port.
      delete c.ports;
    }
    docs.push(d);
  }
  return { yaml: docs.map((d) => stringify(d)).join("---\n"), deployments, claims: [...claims] };
}
