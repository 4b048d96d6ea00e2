// Keeps deploy/ (the Dockerfile and the Kubernetes manifests) consistent with the code: the
// services that exist, the settings catalog, the command line every service runs with, the
// ports, the health probes, who calls whom, and the shared store: the S3 bucket of the
// recommended manifests (deploy/kubernetes) and the ReadWriteMany volume of their filesystem
// overlay (deploy/kubernetes-filesystem, rendered as `kubectl kustomize` does by
// deploy/image-check/render.ts; kubectl itself is not needed). Every check collects what is
// wrong and fails with that list. (Over 400 lines: every check reads the same parsed manifests
// and helpers at the top; split into files, each would parse them again or import a helper file
// that exists only for them.)
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { Deployment, type IDeployment } from "kubernetes-models/apps/v1/Deployment";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Namespace } from "kubernetes-models/v1/Namespace";
import { PersistentVolumeClaim } from "kubernetes-models/v1/PersistentVolumeClaim";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service, type IService } from "kubernetes-models/v1/Service";
import { ServiceAccount } from "kubernetes-models/v1/ServiceAccount";
import { Ingress, type IIngress } from "kubernetes-models/networking.k8s.io/v1/Ingress";
import { NetworkPolicy, type INetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { PodDisruptionBudget, type IPodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { DEPLOYMENT_SETTINGS, envName, loadSettings, SETTINGS } from "@svc/kit";
import { serviceNodeOptions } from "@svc/devstack/runtime";
import { kustomize } from "./image-check/render.js";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const deployDir = join(repoRoot, "deploy");
const k8sDir = join(deployDir, "kubernetes");
/** The overlay of k8sDir with the blob store on a ReadWriteMany volume (single-node installs). */
const filesystemDir = join(deployDir, "kubernetes-filesystem");
const rel = (p: string) => p.slice(repoRoot.length + 1);

/** Services that exist: a folder under services/ with src/main.ts (as `npm start` finds them). */
const SERVICES = readdirSync(join(repoRoot, "services"))
  .filter((n) => existsSync(join(repoRoot, "services", n, "src", "main.ts")))
  .sort();
/** The public door (docs/internals/architecture.md, "The gateway and its upstreams"). */
const GATEWAY = "gateway";
const HEALTH = { live: "/health/live", started: "/health/started", ready: "/health/ready" } as const;
const HEALTH_PATHS: string[] = Object.values(HEALTH);
/** The settings ConfigMap every Deployment takes whole, and the Secret template. */
const SETTINGS_CONFIGMAP = "svc-settings";
const SECRET_NAME = "svc-secrets";

type Settings = typeof SETTINGS;
type Field = keyof Settings;
const FIELDS = Object.keys(SETTINGS) as Field[];
const KNOWN_ENV = new Map(FIELDS.map((f) => [envName(SETTINGS[f].name), f]));
const isSecretSetting = (f: Field) => (SETTINGS[f] as { secret?: boolean }).secret === true;
const SECRET_ENV = FIELDS.filter(isSecretSetting).map((f) => envName(SETTINGS[f].name)).sort();
const DEPLOYMENT_WIDE_ENV = new Set(DEPLOYMENT_SETTINGS.map((f) => envName(SETTINGS[f].name)));
/** Services that use the blob store: the ones that read svc.storage. */
const STORE_USERS = SERVICES.filter((s) => (SETTINGS.storage.readBy as readonly string[]).includes(s));
/** The settings that say where the blob store is (svc.storage, svc.filesystem-root, svc.storage.s3.*). */
const STORAGE_FIELDS = FIELDS.filter((f) => f === "storage" || f === "filesystemRoot" || SETTINGS[f].name.startsWith("svc.storage.s3."));
/** svc.<service>.url settings: where one service finds another. */
const URL_SETTINGS = FIELDS.flatMap((f) => {
  const m = /^svc\.([a-z0-9-]+)\.url$/.exec(SETTINGS[f].name);
  return m && SERVICES.includes(m[1]!) ? [{ field: f, target: m[1]!, env: envName(SETTINGS[f].name) }] : [];
});

/** The exact command line of tools/devstack/src/runtime.ts and service-runner.ts, from the image's working folder. */
const commandFor = (service: string) => ["node", ...serviceNodeOptions(service), "--import", "tsx", `services/${service}/src/main.ts`];

// ---------------------------------------------------------------------------------------------
// reading the manifests

interface Doc {
  file: string;
  obj: Record<string, unknown>;
}

function yamlFiles(): string[] {
  return readdirSync(k8sDir).filter((f) => /\.ya?ml$/.test(f)).sort();
}

function readDocs(file: string): { docs: Doc[]; errors: string[] } {
  const docs: Doc[] = [];
  const errors: string[] = [];
  parseAllDocuments(readFileSync(join(k8sDir, file), "utf8")).forEach((d, i) => {
    for (const e of [...d.errors, ...d.warnings]) errors.push(`${file} document ${i + 1}: ${e.message}`);
    const obj = d.toJS() as unknown;
    if (obj === null || obj === undefined) return;
    if (typeof obj !== "object" || Array.isArray(obj)) errors.push(`${file} document ${i + 1} is not a mapping`);
    else docs.push({ file, obj: obj as Record<string, unknown> });
  });
  return { docs, errors };
}

const all = yamlFiles().flatMap((f) => readDocs(f).docs);
const isExample = (file: string) => file.endsWith(".example.yaml");
const applied = all.filter((d) => !isExample(d.file) && d.file !== "kustomization.yaml");
const examples = all.filter((d) => isExample(d.file));
const kustomization = all.find((d) => d.file === "kustomization.yaml")?.obj as
  | { resources?: string[]; namespace?: string; images?: { name?: string; newName?: string; newTag?: string }[] }
  | undefined;

const ofKind = (docs: Doc[], kind: string) => docs.filter((d) => d.obj.kind === kind);
const nameOf = (d: Doc) => String((d.obj.metadata as { name?: unknown } | undefined)?.name ?? "");
const where = (d: Doc) => `${d.obj.kind} ${nameOf(d)} (${d.file})`;

const deployments = ofKind(applied, "Deployment").map((d) => ({ doc: d, m: d.obj as unknown as IDeployment }));
const services = ofKind(applied, "Service").map((d) => ({ doc: d, m: d.obj as unknown as IService }));
const policies = ofKind(applied, "NetworkPolicy").map((d) => ({ doc: d, m: d.obj as unknown as INetworkPolicy }));
const budgets = ofKind(applied, "PodDisruptionBudget").map((d) => ({ doc: d, m: d.obj as unknown as IPodDisruptionBudget }));
const ingresses = ofKind([...applied, ...examples], "Ingress").map((d) => ({ doc: d, m: d.obj as unknown as IIngress }));
const configMap = ofKind(applied, "ConfigMap").find((d) => nameOf(d) === SETTINGS_CONFIGMAP);
const settingsData = ((configMap?.obj.data ?? {}) as Record<string, string>);
const secretDoc = ofKind(all, "Secret").find((d) => nameOf(d) === SECRET_NAME);
const secretData = ((secretDoc?.obj.stringData ?? secretDoc?.obj.data ?? {}) as Record<string, string>);

type Container = NonNullable<NonNullable<NonNullable<IDeployment["spec"]>["template"]["spec"]>["containers"]>[number];
const podSpec = (d: IDeployment) => d.spec?.template.spec;
const podLabels = (d: IDeployment) => d.spec?.template.metadata?.labels ?? {};
const containerOf = (d: IDeployment): Container | undefined => podSpec(d)?.containers[0];
const deploymentNamed = (name: string) => deployments.find((d) => d.m.metadata?.name === name);

/** Whether every label of a selector is on the pod. An empty selector matches everything. */
function selects(selector: Record<string, string> | undefined, labels: Record<string, string>): boolean {
  return Object.entries(selector ?? {}).every(([k, v]) => labels[k] === v);
}

/** Deployments whose pods a label selector picks. */
function selected(selector: Record<string, string> | undefined): string[] {
  return deployments.filter((d) => selects(selector, podLabels(d.m))).map((d) => d.m.metadata?.name ?? "?");
}

/** A port given by number or by a container port's name, as the container's port number. */
function resolvePort(c: Container | undefined, port: number | string | undefined): number | undefined {
  if (c === undefined || port === undefined) return undefined;
  const ports = c.ports ?? [];
  const p = typeof port === "number" ? ports.find((x) => x.containerPort === port) : ports.find((x) => x.name === port);
  return p?.containerPort;
}

/** A Deployment's literal env values (value:, not valueFrom). */
function literalEnv(d: IDeployment): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of containerOf(d)?.env ?? []) if (e.value !== undefined) out[e.name] = e.value;
  return out;
}

/** Settings a Deployment's container receives, and from where. */
function settingSources(d: IDeployment): Map<string, "configmap" | "literal" | "secret" | "optional-secret"> {
  const out = new Map<string, "configmap" | "literal" | "secret" | "optional-secret">();
  const c = containerOf(d);
  for (const from of c?.envFrom ?? []) {
    if (from.configMapRef?.name === SETTINGS_CONFIGMAP) for (const k of Object.keys(settingsData)) out.set(k, "configmap");
  }
  for (const e of c?.env ?? []) {
    if (e.value !== undefined) out.set(e.name, "literal");
    else if (e.valueFrom?.secretKeyRef) out.set(e.name, e.valueFrom.secretKeyRef.optional ? "optional-secret" : "secret");
  }
  return out;
}

/** The port a Deployment's service listens on: SVC_PORT from its env or the ConfigMap, else the default. */
function svcPort(d: IDeployment): number {
  const raw = literalEnv(d).SVC_PORT ?? settingsData.SVC_PORT;
  return raw === undefined ? SETTINGS.port.default : Number(raw);
}

function sourceOf(service: string, file: string): string {
  const p = join(repoRoot, "services", service, "src", file);
  return existsSync(p) ? readFileSync(p, "utf8") : "";
}

/**
 * Settings a service refuses to start without: the REQUIRED_SETTINGS its config.ts exports and
 * passes to requireSettings. Undefined when a service exports none.
 */
const REQUIRED = new Map<string, Field[] | undefined>(
  await Promise.all(
    SERVICES.map(async (s): Promise<[string, Field[] | undefined]> => {
      const file = join(repoRoot, "services", s, "src", "config.ts");
      const mod = existsSync(file) ? ((await import(file)) as { REQUIRED_SETTINGS?: readonly string[] }) : {};
      return [s, mod.REQUIRED_SETTINGS?.filter((f): f is Field => f in SETTINGS)];
    }),
  ),
);
const requiredFields = (service: string): Field[] => REQUIRED.get(service) ?? [];

/** Services a service calls over HTTP: the svc.<target>.url settings its config.ts reads. */
function callees(service: string): string[] {
  const src = sourceOf(service, "config.ts");
  return URL_SETTINGS.filter((u) => new RegExp(`["']${u.field}["']`).test(src)).map((u) => u.target);
}
/** Whether a service's pods call each other: its config.ts reads svc.<service>.node-url (where its peers reach it). */
function callsPeers(service: string): boolean {
  const field = FIELDS.find((f) => SETTINGS[f].name === `svc.${service}.node-url`);
  return field !== undefined && new RegExp(`["']${field}["']`).test(sourceOf(service, "config.ts"));
}
const callersOf = (target: string) => SERVICES.filter((s) => (s === target ? callsPeers(s) : callees(s).includes(target)));

function bytes(q: string | number | undefined): number | undefined {
  if (q === undefined) return undefined;
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(String(q));
  if (!m) return undefined;
  const unit = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, k: 1e3, M: 1e6, G: 1e9, T: 1e12 }[m[2] ?? ""] ?? 1;
  return Number(m[1]) * unit;
}

function cores(q: string | number | undefined): number | undefined {
  if (q === undefined) return undefined;
  const m = /^(\d+(?:\.\d+)?)(m)?$/.exec(String(q));
  return m ? Number(m[1]) / (m[2] ? 1000 : 1) : undefined;
}

/** Each object checked against the Kubernetes API schema (types and required fields, kubernetes-models). */
function schemaProblems(docs: Doc[]): string[] {
  const models: Record<string, (o: never) => { validate(): void }> = {
    "v1/Namespace": (o) => new Namespace(o),
    "v1/ConfigMap": (o) => new ConfigMap(o),
    "v1/Secret": (o) => new Secret(o),
    "v1/Service": (o) => new Service(o),
    "v1/ServiceAccount": (o) => new ServiceAccount(o),
    "v1/PersistentVolumeClaim": (o) => new PersistentVolumeClaim(o),
    "apps/v1/Deployment": (o) => new Deployment(o),
    "networking.k8s.io/v1/NetworkPolicy": (o) => new NetworkPolicy(o),
    "networking.k8s.io/v1/Ingress": (o) => new Ingress(o),
    "policy/v1/PodDisruptionBudget": (o) => new PodDisruptionBudget(o),
  };
  const problems: string[] = [];
  for (const d of docs) {
    if (d.obj.kind === "Kustomization") continue;
    const key = `${String(d.obj.apiVersion)}/${String(d.obj.kind)}`;
    const make = models[key];
    if (!make) {
      problems.push(`${where(d)}: no schema for ${key} in this test; add its kubernetes-models class to the table`);
      continue;
    }
    try {
      make(d.obj as never).validate();
    } catch (err) {
      problems.push(`${where(d)}: ${(err as Error).message}`);
    }
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------

describe("deploy/kubernetes", () => {
  it("has manifests to check", () => {
    expect(SERVICES.length, "no services/<name>/src/main.ts found").toBeGreaterThan(0);
    expect(deployments.length, `no Deployment in ${rel(k8sDir)}`).toBeGreaterThan(0);
    expect(kustomization, `${rel(k8sDir)}/kustomization.yaml is missing`).toBeDefined();
    expect(configMap, `no ConfigMap ${SETTINGS_CONFIGMAP}`).toBeDefined();
    expect(secretDoc, `no Secret ${SECRET_NAME} (template)`).toBeDefined();
  });

  it("every YAML document parses and has apiVersion, kind and a name", () => {
    const problems: string[] = [];
    for (const f of yamlFiles()) {
      const { docs, errors } = readDocs(f);
      problems.push(...errors);
      for (const d of docs) {
        if (typeof d.obj.apiVersion !== "string" || typeof d.obj.kind !== "string") problems.push(`${f}: a document without apiVersion or kind`);
        else if (d.obj.kind !== "Kustomization" && nameOf(d) === "") problems.push(`${f}: ${d.obj.kind} without metadata.name`);
      }
    }
    expect(problems).toEqual([]);
  });

  it("every object is valid against the Kubernetes API schema (kubernetes-models)", () => {
    expect(schemaProblems(all)).toEqual([]);
  });

  it("the kustomization lists every manifest of the folder and none of the *.example.yaml templates", () => {
    const problems: string[] = [];
    const listed = kustomization?.resources ?? [];
    for (const f of yamlFiles()) {
      if (f === "kustomization.yaml") continue;
      if (isExample(f) && listed.includes(f)) problems.push(`kustomization.yaml lists the template ${f}: \`kubectl apply -k\` would apply its placeholders (and overwrite a real Secret)`);
      if (!isExample(f) && !listed.includes(f)) problems.push(`kustomization.yaml does not list ${f}: \`kubectl apply -k\` would leave it out`);
    }
    for (const f of listed) if (!existsSync(join(k8sDir, f))) problems.push(`kustomization.yaml lists ${f}, which is not in ${rel(k8sDir)}`);
    const ns = ofKind(applied, "Namespace").map(nameOf);
    if (kustomization?.namespace && !ns.includes(kustomization.namespace)) problems.push(`kustomization.yaml puts everything in namespace ${kustomization.namespace}, but namespace.yaml names ${ns.join(", ") || "none"}`);
    expect(problems).toEqual([]);
  });

  it("every service in services/ has a Deployment and a Service, and there are no others", () => {
    const problems: string[] = [];
    for (const s of SERVICES) {
      if (!deploymentNamed(s)) problems.push(`services/${s}/src/main.ts exists but there is no Deployment ${s}`);
      if (!services.some((x) => x.m.metadata?.name === s)) problems.push(`services/${s}/src/main.ts exists but there is no Service ${s}`);
    }
    for (const d of deployments) if (!SERVICES.includes(d.m.metadata?.name ?? "")) problems.push(`${where(d.doc)} runs no service of services/ (no services/${d.m.metadata?.name}/src/main.ts)`);
    for (const s of services) if (!SERVICES.includes(s.m.metadata?.name ?? "")) problems.push(`${where(s.doc)} is named after no service of services/`);
    expect(problems).toEqual([]);
  });

  it("every container runs the one command line of tools/devstack/src/runtime.ts, from one image", () => {
    const problems: string[] = [];
    const images = new Set<string>();
    for (const d of deployments) {
      const name = d.m.metadata?.name ?? "";
      const containers = podSpec(d.m)?.containers ?? [];
      if (containers.length !== 1) problems.push(`${where(d.doc)} has ${containers.length} containers; one is expected`);
      const c = containerOf(d.m);
      const want = commandFor(name);
      if (JSON.stringify(c?.command) !== JSON.stringify(want)) problems.push(`${where(d.doc)}: command is ${JSON.stringify(c?.command)}, want ${JSON.stringify(want)}`);
      if (c?.args?.length) problems.push(`${where(d.doc)}: args ${JSON.stringify(c.args)} would follow main.ts; put settings in the ConfigMap or env`);
      if (c?.image) images.add(c.image);
    }
    if (images.size !== 1) problems.push(`the Deployments use ${images.size} images (${[...images].join(", ")}); deploy/Dockerfile builds one for every service`);
    const image = [...images][0]?.replace(/[:@].*$/, "");
    const entry = kustomization?.images?.find((i) => i.name === image);
    if (image && !entry) problems.push(`kustomization.yaml has no images entry named ${image}, so the registry and tag cannot be set in one place`);
    expect(problems).toEqual([]);
  });

  it("every SVC_* name is a setting of the kit catalog", () => {
    const problems: string[] = [];
    const check = (name: string, at: string) => {
      if (name.startsWith("SVC_") && !KNOWN_ENV.has(name)) problems.push(`${at}: ${name} is no setting of packages/kit/src/settings.ts (SETTINGS); the services would ignore it`);
    };
    for (const k of Object.keys(settingsData)) {
      if (!k.startsWith("SVC_")) problems.push(`ConfigMap ${SETTINGS_CONFIGMAP}: ${k} is not a SVC_* setting`);
      check(k, `ConfigMap ${SETTINGS_CONFIGMAP}`);
    }
    for (const k of Object.keys(secretData)) check(k, `Secret ${SECRET_NAME}`);
    for (const d of deployments) {
      for (const e of containerOf(d.m)?.env ?? []) {
        check(e.name, where(d.doc));
        const ref = e.valueFrom?.secretKeyRef ?? e.valueFrom?.configMapKeyRef;
        if (ref?.key) check(ref.key, `${where(d.doc)} (key referenced by ${e.name})`);
      }
    }
    // The commented-out examples in settings.yaml too.
    for (const m of readFileSync(join(k8sDir, "settings.yaml"), "utf8").matchAll(/^\s*#\s*(SVC_[A-Z0-9_]+)\s*:/gm)) check(m[1]!, "settings.yaml (comment)");
    expect(problems).toEqual([]);
  });

  it("secret settings come only from the Secret, and its template names every one of them", () => {
    const problems: string[] = [];
    for (const k of Object.keys(settingsData)) if (SECRET_ENV.includes(k)) problems.push(`ConfigMap ${SETTINGS_CONFIGMAP} holds ${k}, a secret setting: put it in the Secret ${SECRET_NAME}`);
    for (const d of deployments) {
      for (const e of containerOf(d.m)?.env ?? []) {
        if (SECRET_ENV.includes(e.name) && !e.valueFrom?.secretKeyRef) problems.push(`${where(d.doc)}: ${e.name} is a secret setting and must come from a secretKeyRef`);
        const ref = e.valueFrom?.secretKeyRef;
        if (ref && ref.name !== SECRET_NAME) problems.push(`${where(d.doc)}: ${e.name} refers to Secret ${ref.name}; the template is ${SECRET_NAME}`);
        if (ref && !(ref.key in secretData)) problems.push(`${where(d.doc)}: ${e.name} refers to key ${ref.key}, which the Secret template does not have`);
      }
    }
    const keys = Object.keys(secretData).sort();
    for (const k of SECRET_ENV) if (!keys.includes(k)) problems.push(`the Secret template (${secretDoc?.file}) lacks ${k}, a secret setting of the kit catalog`);
    for (const k of keys) if (!SECRET_ENV.includes(k)) problems.push(`the Secret template holds ${k}, which the kit catalog does not mark secret: put it in the ConfigMap`);
    expect(problems).toEqual([]);
  });

  it("each Deployment passes from the Secret every secret setting its service reads, and no other", () => {
    // What a service reads is the catalog's readBy (packages/kit/src/settings.ts), which
    // settings-reference.test.ts holds to each service's config.ts. A secret setting it reads but
    // is not given falls back to its default without a word (svc.internal-secret-previous: the
    // rotation guide's second secret would be refused by that service); one it does not read is a
    // secret the pod holds for nothing.
    const problems: string[] = [];
    for (const d of deployments) {
      const name = d.m.metadata?.name ?? "";
      const given = new Map((containerOf(d.m)?.env ?? []).filter((e) => e.valueFrom?.secretKeyRef).map((e) => [e.name, e.valueFrom!.secretKeyRef!.key]));
      for (const f of FIELDS.filter(isSecretSetting)) {
        const env = envName(SETTINGS[f].name);
        const readBy = SETTINGS[f].readBy;
        const reads = readBy === "every" || (readBy as readonly string[]).includes(name);
        if (reads && !given.has(env)) problems.push(`${where(d.doc)}: services/${name} reads ${SETTINGS[f].name} (readBy in packages/kit/src/settings.ts), but ${env} is not passed from the Secret ${SECRET_NAME}`);
        else if (reads && given.get(env) !== env) problems.push(`${where(d.doc)}: ${env} comes from the Secret's key ${given.get(env)}, want ${env}`);
        if (!reads && given.has(env)) problems.push(`${where(d.doc)}: passes ${env}, which services/${name} never reads; each pod holds only the secrets its service uses`);
      }
    }
    expect(problems).toEqual([]);
  });

  it("every placeholder of the Secret template is refused by the settings loader", () => {
    // A template applied without being filled in must stop the services, not run with it.
    const problems: string[] = [];
    for (const [k, v] of Object.entries(secretData)) {
      if (v.trim() === "") continue;
      let accepted = true;
      try {
        loadSettings({ argv: [], env: { [k]: v } });
      } catch {
        accepted = false;
      }
      if (accepted) problems.push(`the placeholder of ${k} ("${v}") is a valid value: a Secret applied unchanged would run with it; use one the loader refuses`);
    }
    expect(problems).toEqual([]);
  });

  it("the settings each Deployment gets are accepted by the loader, and the ones its service requires are there", () => {
    const problems: string[] = [];
    for (const d of deployments) {
      const name = d.m.metadata?.name ?? "";
      try {
        loadSettings({ argv: [], env: { ...settingsData, ...literalEnv(d.m) } });
      } catch (err) {
        problems.push(`${where(d.doc)}: ${(err as Error).message}`);
      }
      const got = settingSources(d.m);
      if (REQUIRED.get(name) === undefined) problems.push(`services/${name}/src/config.ts exports no REQUIRED_SETTINGS (the settings it passes to requireSettings) for this test to read`);
      for (const f of requiredFields(name)) {
        const env = envName(SETTINGS[f].name);
        const from = got.get(env);
        if (from === undefined) problems.push(`${where(d.doc)}: services/${name}/src/config.ts requires ${SETTINGS[f].name}, but ${env} is not set`);
        else if (from === "optional-secret") problems.push(`${where(d.doc)}: ${env} is required by the service but its secretKeyRef is optional`);
      }
    }
    expect(problems).toEqual([]);
  });

  it("each pod's termination grace period outlasts the shutdown grace its service is given", () => {
    // On SIGTERM a service finishes what is under way for svc.shutdown-grace; Kubernetes kills
    // the pod after terminationGracePeriodSeconds (default 30) whatever it is doing.
    const problems: string[] = [];
    for (const d of deployments) {
      const grace = loadSettings({ argv: [], env: { ...settingsData, ...literalEnv(d.m) } }).shutdownGraceMs;
      const podGrace = (d.m.spec?.template?.spec?.terminationGracePeriodSeconds ?? 30) * 1000;
      if (!(grace < podGrace)) problems.push(`${where(d.doc)}: svc.shutdown-grace is ${grace / 1000} s but the pod is killed after ${podGrace / 1000} s: raise terminationGracePeriodSeconds above it`);
    }
    expect(problems).toEqual([]);
  });

  it("deployment-wide settings come from the one ConfigMap every Deployment takes whole", () => {
    // Nodes announce a digest of each deployment-wide setting; one that differs raises the
    // critical advisory svc.nodes.settings-differ. Setting one per Deployment invites that.
    const problems: string[] = [];
    for (const d of deployments) {
      const c = containerOf(d.m);
      if (!c?.envFrom?.some((e) => e.configMapRef?.name === SETTINGS_CONFIGMAP)) problems.push(`${where(d.doc)} does not take the ConfigMap ${SETTINGS_CONFIGMAP} (envFrom)`);
      for (const e of c?.env ?? []) if (DEPLOYMENT_WIDE_ENV.has(e.name)) problems.push(`${where(d.doc)} sets ${e.name}, a deployment-wide setting (DEPLOYMENT_SETTINGS): set it in ${SETTINGS_CONFIGMAP} so every node agrees`);
    }
    expect(problems).toEqual([]);
  });

  it("probes use the health paths on the port the service listens on", () => {
    const problems: string[] = [];
    for (const d of deployments) {
      const name = d.m.metadata?.name ?? "";
      const c = containerOf(d.m);
      const port = svcPort(d.m);
      if (!(c?.ports ?? []).some((p) => p.containerPort === port)) problems.push(`${where(d.doc)}: the service listens on ${port} (SVC_PORT) but no containerPort says so`);
      // Liveness must not follow dependencies (a Postgres outage would restart every pod), and
      // the gateway's /health/ready is the whole deployment's health (see gateway.yaml).
      const want = { startupProbe: HEALTH.started, livenessProbe: HEALTH.live, readinessProbe: name === GATEWAY ? HEALTH.started : HEALTH.ready } as const;
      for (const kind of Object.keys(want) as (keyof typeof want)[]) {
        const probe = c?.[kind];
        const get = probe?.httpGet;
        if (!get) {
          problems.push(`${where(d.doc)}: no ${kind} with httpGet`);
          continue;
        }
        if (!HEALTH_PATHS.includes(get.path ?? "")) problems.push(`${where(d.doc)}: ${kind} path ${get.path} is none of ${HEALTH_PATHS.join(", ")}`);
        else if (get.path !== want[kind]) problems.push(`${where(d.doc)}: ${kind} path is ${get.path}, want ${want[kind]}`);
        const target = resolvePort(c, get.port);
        if (target === undefined) problems.push(`${where(d.doc)}: ${kind} port ${get.port} is not a container port`);
        else if (target !== port) problems.push(`${where(d.doc)}: ${kind} probes port ${target} but the service listens on ${port}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it("every Service selects exactly its Deployment's pods and targets their port", () => {
    const problems: string[] = [];
    for (const s of services) {
      const name = s.m.metadata?.name ?? "";
      const sel = s.m.spec?.selector;
      if (!sel || Object.keys(sel).length === 0) {
        problems.push(`${where(s.doc)} has no selector`);
        continue;
      }
      const picks = selected(sel);
      if (picks.length !== 1 || picks[0] !== name) problems.push(`${where(s.doc)} selects the pods of [${picks.join(", ")}], want [${name}]`);
      const d = deploymentNamed(name);
      for (const p of s.m.spec?.ports ?? []) {
        const target = resolvePort(d && containerOf(d.m), p.targetPort ?? p.port);
        if (target === undefined) problems.push(`${where(s.doc)}: targetPort ${p.targetPort ?? p.port} is no containerPort of Deployment ${name}`);
        else if (d && target !== svcPort(d.m)) problems.push(`${where(s.doc)}: targetPort resolves to ${target} but the service listens on ${svcPort(d.m)}`);
      }
      if (name !== GATEWAY && (s.m.spec?.type ?? "ClusterIP") !== "ClusterIP") problems.push(`${where(s.doc)} is ${s.m.spec?.type}: only the gateway may be exposed`);
    }
    for (const d of deployments) {
      if (!selects(d.m.spec?.selector.matchLabels, podLabels(d.m))) problems.push(`${where(d.doc)}: its selector does not match its own pod labels`);
    }
    for (const b of budgets) {
      const picks = selected(b.m.spec?.selector?.matchLabels);
      if (picks.length !== 1) problems.push(`${where(b.doc)} selects the pods of [${picks.join(", ")}]; one Deployment is expected`);
    }
    for (const i of ingresses) {
      for (const rule of i.m.spec?.rules ?? []) {
        for (const path of rule.http?.paths ?? []) {
          const svc = services.find((s) => s.m.metadata?.name === path.backend.service?.name);
          const want = path.backend.service?.port;
          if (path.backend.service?.name !== GATEWAY || !svc) problems.push(`${where(i.doc)} sends ${path.path} to ${path.backend.service?.name}; only the gateway is public`);
          else if (!(svc.m.spec?.ports ?? []).some((p) => (want?.name !== undefined ? p.name === want.name : p.port === want?.number))) problems.push(`${where(i.doc)}: port ${want?.name ?? want?.number} is no port of Service ${GATEWAY}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it("every svc.<service>.url setting points at that service's Service and port", () => {
    const problems: string[] = [];
    const ns = kustomization?.namespace;
    for (const u of URL_SETTINGS) {
      const raw = settingsData[u.env];
      if (raw === undefined) {
        problems.push(`ConfigMap ${SETTINGS_CONFIGMAP} does not set ${u.env}; its default (${String(SETTINGS[u.field].default)}) is a local address, not the ${u.target} Service`);
        continue;
      }
      let url: URL;
      try {
        url = new URL(raw);
      } catch {
        problems.push(`${u.env}: "${raw}" is not a URL`);
        continue;
      }
      const hosts = [u.target, ...(ns ? [`${u.target}.${ns}`, `${u.target}.${ns}.svc`, `${u.target}.${ns}.svc.cluster.local`] : [])];
      if (!hosts.includes(url.hostname)) problems.push(`${u.env}=${raw}: host ${url.hostname} is not the Service ${u.target} (${hosts.join(", ")})`);
      const svc = services.find((s) => s.m.metadata?.name === u.target);
      const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
      const sp = svc?.m.spec?.ports?.find((p) => p.port === port);
      if (!svc) problems.push(`${u.env}=${raw}: there is no Service ${u.target}`);
      else if (!sp) problems.push(`${u.env}=${raw}: Service ${u.target} has no port ${port} (it has ${(svc.m.spec?.ports ?? []).map((p) => p.port).join(", ")})`);
      if (url.protocol !== "http:") problems.push(`${u.env}=${raw}: the services speak plain HTTP inside the cluster`);
    }
    expect(problems).toEqual([]);
  });

  it("network policies: only the gateway is open, each upstream accepts exactly the pods that call it", () => {
    const problems: string[] = [];
    const denyAll = policies.some((p) => Object.keys(p.m.spec?.podSelector?.matchLabels ?? {}).length === 0 && !p.m.spec?.podSelector?.matchExpressions && (p.m.spec?.policyTypes ?? []).includes("Ingress") && (p.m.spec?.ingress ?? []).length === 0);
    if (!denyAll) problems.push("no default-deny NetworkPolicy (podSelector {}, policyTypes [Ingress], no ingress rules): pods not named below would be open to every pod of the cluster");
    for (const d of deployments) {
      const name = d.m.metadata?.name ?? "";
      const c = containerOf(d.m);
      const rules = policies.filter((p) => selects(p.m.spec?.podSelector?.matchLabels, podLabels(d.m))).flatMap((p) => (p.m.spec?.ingress ?? []).map((r) => ({ p, r })));
      let open = false;
      const from = new Set<string>();
      for (const { p, r } of rules) {
        for (const port of r.ports ?? []) {
          const target = resolvePort(c, port.port);
          if (target !== svcPort(d.m)) problems.push(`${where(p.doc)} opens port ${port.port} on ${name}, which is not the port it listens on (${svcPort(d.m)})`);
        }
        if (!r.from || r.from.length === 0) {
          open = true;
          continue;
        }
        for (const peer of r.from) {
          if (peer.ipBlock || peer.namespaceSelector) {
            if (name !== GATEWAY) problems.push(`${where(p.doc)} lets ${peer.ipBlock ? "an address block" : "another namespace"} reach ${name}; only the gateway is reachable from outside`);
            continue;
          }
          const picks = selected(peer.podSelector?.matchLabels);
          if (picks.length !== 1) problems.push(`${where(p.doc)}: a source of ${name} selects the pods of [${picks.join(", ")}]; name one Deployment per source`);
          for (const s of picks) from.add(s);
        }
      }
      if (name === GATEWAY) {
        if (!open) problems.push(`no NetworkPolicy lets clients reach the gateway: it is the public door`);
        continue;
      }
      if (open) problems.push(`a NetworkPolicy opens ${name} to everyone; only the gateway is reachable from outside`);
      const callers = callersOf(name);
      for (const s of callers) if (!from.has(s)) problems.push(`${s} calls ${name} (services/${s}/src/config.ts reads ${URL_SETTINGS.find((u) => u.target === name)?.field}) but no NetworkPolicy lets it in`);
      for (const s of from) if (!callers.includes(s)) problems.push(`${name} accepts traffic from ${s}, which never calls it (no svc.${name}.url in services/${s}/src/config.ts)`);
    }
    expect(problems).toEqual([]);
  });

  it("the recommended variant keeps the blob store in one S3 bucket: no PersistentVolumeClaim, nothing needs ReadWriteMany", () => {
    const problems: string[] = [];
    for (const pvc of ofKind(applied, "PersistentVolumeClaim")) problems.push(`${where(pvc)}: the S3 variant needs no volume; the store volume belongs in ${rel(filesystemDir)}`);
    for (const d of deployments) {
      for (const v of podSpec(d.m)?.volumes ?? []) if (v.persistentVolumeClaim) problems.push(`${where(d.doc)} mounts the claim ${v.persistentVolumeClaim.claimName} (volume ${v.name}); pods of the S3 variant share no volume`);
    }
    if (settingsData.SVC_STORAGE !== "s3") problems.push(`ConfigMap ${SETTINGS_CONFIGMAP} sets SVC_STORAGE to ${JSON.stringify(settingsData.SVC_STORAGE)}, want "s3"`);
    if (!settingsData.SVC_STORAGE_S3_BUCKET?.trim()) problems.push(`ConfigMap ${SETTINGS_CONFIGMAP} does not set SVC_STORAGE_S3_BUCKET (svc.storage.s3.bucket is required with svc.storage=s3)`);
    expect(problems).toEqual([]);
  });

  it("every service that uses the store loads the same S3 store, with the optional keys from the Secret", () => {
    const problems: string[] = [];
    const seen = new Map<string, string>();
    if (STORE_USERS.length === 0) problems.push("no service reads svc.storage (readBy in packages/kit/src/settings.ts)");
    for (const name of STORE_USERS) {
      const d = deploymentNamed(name);
      if (!d) continue; // "every service in services/ has a Deployment" names it
      const c = containerOf(d.m);
      for (const e of c?.env ?? []) if (e.name === "SVC_FILESYSTEM_ROOT" || e.name.startsWith("SVC_STORAGE") && e.value !== undefined) problems.push(`${where(d.doc)} sets ${e.name} itself; the store is the ConfigMap's, the same for every pod`);
      let s: ReturnType<typeof loadSettings>;
      try {
        s = loadSettings({ argv: [], env: { ...settingsData, ...literalEnv(d.m) } });
      } catch (err) {
        problems.push(`${where(d.doc)}: ${(err as Error).message}`);
        continue;
      }
      if (s.storage !== "s3" || s.s3Bucket === "") problems.push(`${where(d.doc)}: services/${name} would run with svc.storage=${s.storage}, bucket "${s.s3Bucket}"; want the S3 store and its bucket`);
      const store = JSON.stringify(STORAGE_FIELDS.filter((f) => !isSecretSetting(f)).map((f) => [SETTINGS[f].name, s[f]]));
      seen.set(name, store);
      // Blank or absent keys mean the AWS chain (web identity), so the keys must not be required.
      const sources = settingSources(d.m);
      for (const env of ["SVC_STORAGE_S3_ACCESS_KEY", "SVC_STORAGE_S3_SECRET_KEY"]) {
        if (sources.get(env) !== "optional-secret") problems.push(`${where(d.doc)}: ${env} is ${sources.get(env) ?? "not passed"}; want an optional secretKeyRef (blank: the AWS credential chain)`);
      }
    }
    if (new Set(seen.values()).size > 1) problems.push(`the services that use the store see different stores: ${[...seen].map(([n, v]) => `${n} ${v}`).join("; ")}`);
    expect(problems).toEqual([]);
  });

  it("the services that use the store run as one service account that exists and holds no API token", () => {
    // Its annotation (IRSA) is the bucket's web identity when the Secret leaves the keys blank.
    const problems: string[] = [];
    const accounts = new Set<string>();
    for (const name of STORE_USERS) {
      const d = deploymentNamed(name);
      if (!d) continue;
      const pod = podSpec(d.m);
      if (!pod?.serviceAccountName) problems.push(`${where(d.doc)} names no serviceAccountName: its web identity would be the namespace's default account`);
      else accounts.add(pod.serviceAccountName);
      if (pod?.automountServiceAccountToken !== false) problems.push(`${where(d.doc)}: automountServiceAccountToken is not false; the pods never call the Kubernetes API`);
    }
    if (accounts.size > 1) problems.push(`the services that use the store run as different service accounts (${[...accounts].join(", ")}): one bucket, one identity`);
    for (const a of accounts) {
      const sa = ofKind(applied, "ServiceAccount").find((x) => nameOf(x) === a);
      if (!sa) problems.push(`no ServiceAccount ${a} in ${rel(k8sDir)}`);
      else if (sa.obj.automountServiceAccountToken !== false) problems.push(`${where(sa)}: automountServiceAccountToken is not false`);
    }
    for (const d of deployments) {
      const name = d.m.metadata?.name ?? "";
      const account = podSpec(d.m)?.serviceAccountName;
      if (account && accounts.has(account) && !STORE_USERS.includes(name)) problems.push(`${where(d.doc)} runs as ${account}, the bucket's identity, but services/${name} does not use the store`);
    }
    expect(problems).toEqual([]);
  });

  it("containers run as non-root with a read-only root, no capabilities, and bounded resources", () => {
    const problems: string[] = [];
    // The old generation starts at this size (runtime.ts): a memory limit at or below it would
    // kill the pod before V8 ever collected it.
    const oldSpaceMb = (service: string) => Number(/^--initial-old-space-size=(\d+)$/.exec(serviceNodeOptions(service).find((o) => o.startsWith("--initial-old-space-size=")) ?? "")?.[1] ?? 0);
    for (const d of deployments) {
      const pod = podSpec(d.m);
      const c = containerOf(d.m);
      const sc = c?.securityContext;
      if (!(sc?.runAsNonRoot ?? pod?.securityContext?.runAsNonRoot)) problems.push(`${where(d.doc)}: runAsNonRoot is not set`);
      if ((sc?.runAsUser ?? pod?.securityContext?.runAsUser) === 0) problems.push(`${where(d.doc)}: runs as uid 0`);
      if (sc?.allowPrivilegeEscalation !== false) problems.push(`${where(d.doc)}: allowPrivilegeEscalation is not false`);
      if (!sc?.capabilities?.drop?.includes("ALL")) problems.push(`${where(d.doc)}: capabilities are not dropped (drop: [ALL])`);
      if (sc?.readOnlyRootFilesystem !== true) problems.push(`${where(d.doc)}: the root filesystem is writable; mount volumes where the service writes`);
      // tsx keeps its transform cache under os.tmpdir() and fails at start when it cannot create it.
      const tmp = (c?.volumeMounts ?? []).find((m) => m.mountPath === "/tmp");
      if (sc?.readOnlyRootFilesystem && (!tmp || tmp.readOnly) && !(c?.env ?? []).some((e) => e.name === "TMPDIR")) problems.push(`${where(d.doc)}: no writable /tmp; tsx cannot create its cache on a read-only root`);
      const r = c?.resources;
      for (const k of ["cpu", "memory"] as const) {
        if (r?.requests?.[k] === undefined) problems.push(`${where(d.doc)}: no ${k} request`);
        if (r?.limits?.[k] === undefined) problems.push(`${where(d.doc)}: no ${k} limit`);
      }
      const [mReq, mLim] = [bytes(r?.requests?.memory), bytes(r?.limits?.memory)];
      const [cReq, cLim] = [cores(r?.requests?.cpu), cores(r?.limits?.cpu)];
      if (mReq !== undefined && mLim !== undefined && mLim < mReq) problems.push(`${where(d.doc)}: memory limit below its request`);
      if (cReq !== undefined && cLim !== undefined && cLim < cReq) problems.push(`${where(d.doc)}: cpu limit below its request`);
      if (mLim !== undefined && mLim <= oldSpaceMb(d.m.metadata?.name ?? "") * 2 ** 20) problems.push(`${where(d.doc)}: memory limit ${r?.limits?.memory} is not above the V8 old space's starting size (${oldSpaceMb(d.m.metadata?.name ?? "")} MB, runtime.ts)`);
    }
    expect(problems).toEqual([]);
  });
});

describe("deploy/kubernetes-filesystem (the filesystem variant: an overlay of deploy/kubernetes)", () => {
  const k = readFileSync(join(filesystemDir, "kustomization.yaml"), "utf8");
  const overlay = parseAllDocuments(k)[0]?.toJS() as { resources?: string[]; patches?: { path?: string }[]; namespace?: string } | undefined;
  const rendered: Doc[] = kustomize(filesystemDir).map((obj) => ({ file: `kubectl kustomize ${rel(filesystemDir)}`, obj }));
  const base: Doc[] = kustomize(k8sDir).map((obj) => ({ file: `kubectl kustomize ${rel(k8sDir)}`, obj }));
  const fsDeployments = ofKind(rendered, "Deployment").map((d) => ({ doc: d, m: d.obj as unknown as IDeployment }));
  const fsSettings = (ofKind(rendered, "ConfigMap").find((d) => nameOf(d) === SETTINGS_CONFIGMAP)?.obj.data ?? {}) as Record<string, string>;

  it("its kustomization takes deploy/kubernetes whole and lists every file of its folder", () => {
    const problems: string[] = [];
    const listed = [...(overlay?.resources ?? []), ...(overlay?.patches ?? []).flatMap((p) => (p.path ? [p.path] : []))];
    if (!overlay?.resources?.some((r) => resolve(filesystemDir, r) === k8sDir)) problems.push(`${rel(filesystemDir)}/kustomization.yaml does not take ${rel(k8sDir)} as a resource`);
    for (const f of readdirSync(filesystemDir).filter((n) => /\.ya?ml$/.test(n) && n !== "kustomization.yaml")) {
      if (!listed.includes(f)) problems.push(`${rel(filesystemDir)}/kustomization.yaml does not list ${f}: \`kubectl apply -k\` would leave it out`);
    }
    for (const f of listed) if (!existsSync(join(filesystemDir, f))) problems.push(`${rel(filesystemDir)}/kustomization.yaml lists ${f}, which does not exist`);
    if (overlay?.namespace !== kustomization?.namespace) problems.push(`its namespace is ${overlay?.namespace}, the base's ${kustomization?.namespace}: its own objects (the claim) would land elsewhere`);
    expect(problems).toEqual([]);
  });

  it("every rendered object is valid against the Kubernetes API schema (kubernetes-models)", () => {
    expect(schemaProblems(rendered)).toEqual([]);
  });

  it("changes only the store: the claim, the ConfigMap's svc.storage and the store volume of the services that use it", () => {
    const problems: string[] = [];
    const key = (d: Doc) => `${String(d.obj.kind)} ${nameOf(d)}`;
    const byKey = new Map(base.map((d) => [key(d), d]));
    const changed = rendered.filter((d) => JSON.stringify(d.obj) !== JSON.stringify(byKey.get(key(d))?.obj)).map(key).sort();
    const want = [...STORE_USERS.map((s) => `Deployment ${s}`), `ConfigMap ${SETTINGS_CONFIGMAP}`, ...ofKind(rendered, "PersistentVolumeClaim").map(key)].sort();
    if (JSON.stringify(changed) !== JSON.stringify(want)) problems.push(`the overlay changes [${changed.join(", ")}], want [${want.join(", ")}]`);
    const gone = base.filter((d) => !rendered.some((r) => key(r) === key(d))).map(key);
    if (gone.length > 0) problems.push(`the overlay loses ${gone.join(", ")}`);
    const data = (ofKind(base, "ConfigMap").find((d) => nameOf(d) === SETTINGS_CONFIGMAP)?.obj.data ?? {}) as Record<string, string>;
    const settingsChanged = Object.keys({ ...data, ...fsSettings }).filter((k2) => data[k2] !== fsSettings[k2]);
    if (JSON.stringify(settingsChanged) !== JSON.stringify(["SVC_STORAGE"])) problems.push(`the overlay changes the settings [${settingsChanged.join(", ")}], want only SVC_STORAGE`);
    expect(problems).toEqual([]);
  });

  it("services that use the store load svc.storage=filesystem and share one ReadWriteMany volume at svc.filesystem-root", () => {
    const problems: string[] = [];
    const claims = new Set<string>();
    const roots = new Set<string>();
    let pods = 0;
    for (const d of fsDeployments) {
      const name = d.m.metadata?.name ?? "";
      if (!STORE_USERS.includes(name)) continue;
      let s: ReturnType<typeof loadSettings> | undefined;
      try {
        s = loadSettings({ argv: [], env: { ...fsSettings, ...literalEnv(d.m) } });
      } catch (err) {
        problems.push(`${where(d.doc)}: ${(err as Error).message}`);
      }
      if (s && s.storage !== "filesystem") problems.push(`${where(d.doc)}: services/${name} would run with svc.storage=${s.storage}; want filesystem`);
      const root = s?.filesystemRoot;
      if (!root?.startsWith("/")) {
        problems.push(`${where(d.doc)}: services/${name} requires svc.filesystem-root with svc.storage=filesystem; set SVC_FILESYSTEM_ROOT to an absolute path`);
        continue;
      }
      roots.add(root);
      const mount = (containerOf(d.m)?.volumeMounts ?? []).filter((m) => root === m.mountPath || root.startsWith(`${m.mountPath.replace(/\/$/, "")}/`)).sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
      const volume = podSpec(d.m)?.volumes?.find((v) => v.name === mount?.name);
      if (!mount || !volume) problems.push(`${where(d.doc)}: no volume is mounted at ${root} (svc.filesystem-root)`);
      else if (!volume.persistentVolumeClaim) problems.push(`${where(d.doc)}: the store at ${root} is volume ${volume.name}, not a PersistentVolumeClaim: artifacts would vanish with the pod`);
      else {
        claims.add(volume.persistentVolumeClaim.claimName);
        if (mount.readOnly || volume.persistentVolumeClaim.readOnly) problems.push(`${where(d.doc)}: the store is mounted read-only; ${name} writes to it`);
        pods += d.m.spec?.replicas ?? 1;
      }
    }
    if (claims.size === 0 && problems.length === 0) problems.push(`no service of [${STORE_USERS.join(", ")}] mounts the store`);
    if (claims.size > 1) problems.push(`the services that use the store mount different claims (${[...claims].join(", ")}): the walker must walk what the artifacts service writes`);
    if (roots.size > 1) problems.push(`SVC_FILESYSTEM_ROOT differs between services (${[...roots].join(", ")})`);
    for (const claim of claims) {
      const pvc = ofKind(rendered, "PersistentVolumeClaim").find((p) => nameOf(p) === claim);
      const modes = ((pvc?.obj.spec as { accessModes?: string[] } | undefined)?.accessModes ?? []);
      if (!pvc) problems.push(`no PersistentVolumeClaim ${claim} in ${rel(filesystemDir)}`);
      else if (pods > 1 && !modes.includes("ReadWriteMany")) problems.push(`${where(pvc)} is mounted by ${pods} pods but is not ReadWriteMany (${modes.join(", ")})`);
    }
    expect(problems).toEqual([]);
  });
});

describe("deploy/Dockerfile", () => {
  const dockerfile = existsSync(join(deployDir, "Dockerfile")) ? readFileSync(join(deployDir, "Dockerfile"), "utf8") : "";
  const instructions = dockerfile.replace(/\\\n/g, " ").split("\n").filter((l) => !/^\s*#/.test(l));

  it("builds from node:20-bookworm-slim with the repository's pinned pnpm and a frozen lockfile", () => {
    const problems: string[] = [];
    if (!dockerfile) problems.push("deploy/Dockerfile is missing");
    if (!/node:20-bookworm-slim/.test(instructions.join("\n"))) problems.push("the base image is not node:20-bookworm-slim");
    const pinned = /PNPM_VERSION\s*=\s*"([^"]+)"/.exec(readFileSync(join(repoRoot, "scripts", "ensure-deps.mjs"), "utf8"))?.[1];
    const arg = /^\s*ARG\s+PNPM_VERSION=(\S+)/m.exec(instructions.join("\n"))?.[1];
    if (!pinned) problems.push("scripts/ensure-deps.mjs no longer says PNPM_VERSION");
    else if (arg !== pinned) problems.push(`deploy/Dockerfile installs with pnpm ${arg}, the repository pins ${pinned} (scripts/ensure-deps.mjs)`);
    const install = instructions.find((l) => /pnpm@/.test(l) && /\binstall\b/.test(l)) ?? "";
    if (!/npm exec/.test(install)) problems.push("pnpm is not run through npm exec (corepack is not usable)");
    if (!/--frozen-lockfile/.test(install)) problems.push("the install does not use --frozen-lockfile");
    expect(problems).toEqual([]);
  });

  it("carries only what the services run: no bench, tests or development tooling, production dependencies only", () => {
    const problems: string[] = [];
    const copies = instructions.filter((l) => /^\s*(COPY|ADD)\s/.test(l) && !/--from=/.test(l));
    const sources = copies.flatMap((l) => l.trim().split(/\s+/).slice(1, -1).filter((w) => !w.startsWith("--")));
    for (const s of sources) {
      const top = s.replace(/^\.\//, "").split("/")[0] ?? "";
      if (top === "." || top === "" || top === "*") problems.push(`COPY ${s} takes the whole workspace; copy the workspace manifests, packages/ and services/ only`);
      else if (["bench", "test-e2e", "tools", "scripts", "deploy"].includes(top)) problems.push(`COPY ${s}: ${top}/ is development only and stays out of the image`);
    }
    for (const need of ["package.json", "pnpm-lock.yaml", "pnpm-workspace.yaml", "packages", "services"]) {
      if (!sources.some((s) => s.replace(/^\.\//, "").replace(/\/$/, "") === need)) problems.push(`the image does not copy ${need}`);
    }
    const install = instructions.find((l) => /pnpm@/.test(l) && /\binstall\b/.test(l)) ?? "";
    if (!/(--prod\b|--production\b)/.test(install)) problems.push("the install is not --prod: the image would carry vitest, typescript and the tooling");
    // The command line imports tsx from /app: with --prod it is there only as a production dependency of the root.
    const root = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { dependencies?: Record<string, string> };
    if (!root.dependencies?.tsx) problems.push("tsx is not a production dependency of the root package.json, so a --prod install leaves out what every service runs with");
    const ignore = existsSync(join(repoRoot, ".dockerignore")) ? readFileSync(join(repoRoot, ".dockerignore"), "utf8").split("\n").map((l) => l.trim()) : [];
    for (const p of ["bench", "test-e2e", "tools"]) if (!ignore.includes(p)) problems.push(`.dockerignore does not keep ${p} out of the build context`);
    expect(problems).toEqual([]);
  });

  it("its description label and deploy/README.md name every service of services/, and their number", () => {
    const problems: string[] = [];
    const label = /org\.opencontainers\.image\.description="([^"]*)"/.exec(instructions.join("\n"))?.[1];
    const readme = readFileSync(join(deployDir, "README.md"), "utf8");
    const words = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"];
    if (label === undefined) problems.push("deploy/Dockerfile has no org.opencontainers.image.description label");
    for (const [what, text] of [["the image's description label", label ?? ""], ["deploy/README.md", readme]] as const) {
      for (const s of SERVICES) if (!new RegExp(`\\b${s}\\b`).test(text)) problems.push(`${what} does not name the ${s} service`);
      for (const m of text.matchAll(/\b(two|three|four|five|six|seven|eight|nine|ten) services\b/g)) {
        if (words.indexOf(m[1]!) !== SERVICES.length) problems.push(`${what} speaks of "${m[0]}"; there are ${SERVICES.length}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it("runs as a numeric non-root user and its default command is a service's command line", () => {
    const problems: string[] = [];
    const users = instructions.filter((l) => /^\s*USER\s/.test(l)).map((l) => l.trim().split(/\s+/)[1] ?? "");
    const last = users.at(-1) ?? "";
    // Numeric, so the kubelet can check runAsNonRoot against the image.
    if (!/^[1-9]\d*(:\d+)?$/.test(last)) problems.push(`the image's USER is "${last || "(none: root)"}"; want a numeric non-root uid`);
    const cmd = instructions.find((l) => /^\s*CMD\s/.test(l));
    let argv: unknown;
    try {
      argv = JSON.parse(cmd?.replace(/^\s*CMD\s+/, "") ?? "");
    } catch {
      argv = undefined;
    }
    if (!SERVICES.some((s) => JSON.stringify(argv) === JSON.stringify(commandFor(s)))) problems.push(`CMD ${JSON.stringify(argv)} is not the command line of any service (${JSON.stringify(commandFor(GATEWAY))})`);
    const ignore = existsSync(join(repoRoot, ".dockerignore")) ? readFileSync(join(repoRoot, ".dockerignore"), "utf8").split("\n").map((l) => l.trim()) : [];
    for (const p of [".git", ".data", "node_modules"]) if (!ignore.includes(p)) problems.push(`.dockerignore does not keep ${p} out of the build context`);
    expect(problems).toEqual([]);
  });
});
