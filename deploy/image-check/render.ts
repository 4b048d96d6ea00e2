// The manifests of deploy/kubernetes as `kubectl kustomize` renders them, and the same objects
// adapted to what `podman kube play` (podman 4.3, Debian bookworm) runs. The adaptation lives
// here, never in the manifests: podman ignores Services (so every Deployment's pods get the
// Service's name as a network alias, see run.ts), turns a probe's named port into 0, publishes every
// containerPort on the host, takes
// Secrets only as JSON and has no NetworkPolicy or PodDisruptionBudget.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments, parse as parseYaml, stringify } from "yaml";

export type Obj = Record<string, any>;

/** The fields of kustomization.yaml this renderer understands; any other is refused, not ignored. */
const KNOWN_FIELDS = new Set(["apiVersion", "kind", "namespace", "resources", "images"]);
const CLUSTER_SCOPED = new Set(["Namespace", "PersistentVolume", "ClusterRole", "ClusterRoleBinding", "StorageClass"]);

/**
 * `kubectl kustomize <dir>` for what deploy/kubernetes/kustomization.yaml uses: its resources,
 * the namespace set on every namespaced object (and the Namespace renamed), and its images
 * entries applied to every container's image.
 */
export function kustomize(dir: string): Obj[] {
  const k = parseYaml(readFileSync(join(dir, "kustomization.yaml"), "utf8")) as Obj;
  const unknown = Object.keys(k).filter((f) => !KNOWN_FIELDS.has(f));
  if (unknown.length > 0) throw new Error(`kustomization.yaml uses ${unknown.join(", ")}, which the image check's renderer does not handle (deploy/image-check/render.ts)`);
  const images = (k.images ?? []) as { name: string; newName?: string; newTag?: string }[];
  const out: Obj[] = [];
  for (const file of (k.resources ?? []) as string[]) {
    for (const doc of parseAllDocuments(readFileSync(join(dir, file), "utf8"))) {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]!.message}`);
      const obj = doc.toJS() as Obj | null;
      if (!obj) continue;
      if (k.namespace) {
        if (obj.kind === "Namespace") obj.metadata.name = k.namespace;
        else if (!CLUSTER_SCOPED.has(obj.kind)) obj.metadata.namespace = k.namespace;
      }
      for (const c of obj.spec?.template?.spec?.containers ?? []) {
        const [name, tag] = splitImage(c.image);
        const entry = images.find((i) => i.name === name);
        if (entry) c.image = `${entry.newName ?? name}:${entry.newTag ?? tag ?? "latest"}`;
      }
      out.push(obj);
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
 * container ports dropped (podman would publish them on the host), the image
 * and the replicas set. Everything else of the manifests (commands, security contexts,
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
      for (const e of c.env ?? []) {
        if (e.value !== undefined) set(e.name, e.value);
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
