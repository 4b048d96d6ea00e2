import { randomBytes } from "node:crypto";
import { chmodSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeKey, parseKey } from "@svc/keys";

/**
 * The secrets `npm start` keeps in its data folder (mode 0600), so that a restart keeps the
 * keys issued before: the internal secret and the bootstrap key of the tenant.
 */
function writeSecret(file: string, value: string): void {
  writeFileSync(file, `${value}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
}

function readSecret(file: string): string | undefined {
  try {
    const v = readFileSync(file, "utf8").trim();
    return v === "" ? undefined : v;
  } catch {
    return undefined;
  }
}

/** <dataDir>/internal-secret, made on first use. */
export function localInternalSecret(dataDir: string): string {
  const file = join(dataDir, "internal-secret");
  let secret = readSecret(file);
  if (!secret) {
    secret = randomBytes(32).toString("base64url");
    writeSecret(file, secret);
  } else {
    chmodSync(file, 0o600);
  }
  return secret;
}

function keyTenant(key: string): string | undefined {
  const p = parseKey(key);
  return p.ok ? p.key.tenant : undefined;
}

export interface LocalBootstrapKey {
  key: string;
  file: string;
  /** Made by this call: it is shown once, when the suite is ready. */
  created: boolean;
  /** Said when a key of another tenant was parked under that tenant's name. */
  notes: string[];
}

/** The bootstrap key for `tenant` from <dataDir>/bootstrap-key, made when there is none. */
export function localBootstrapKey(dataDir: string, tenant: string): LocalBootstrapKey {
  const file = join(dataDir, "bootstrap-key");
  const notes: string[] = [];
  let key = readSecret(file);
  if (key !== undefined && keyTenant(key) !== tenant) {
    // The tenant changed: park that key under its tenant's name, take this tenant's if parked.
    const old = keyTenant(key);
    renameSync(file, `${file}.${old ?? "invalid"}`);
    const parked = `${file}.${tenant}`;
    key = readSecret(parked);
    if (key !== undefined && keyTenant(key) === tenant) {
      renameSync(parked, file);
    } else {
      key = undefined;
    }
    notes.push(`the bootstrap key in ${file} was for tenant "${old ?? "?"}"; moved it to ${file}.${old ?? "invalid"}`);
  }
  if (key !== undefined) {
    chmodSync(file, 0o600);
    return { key, file, created: false, notes };
  }
  key = makeKey(tenant);
  writeSecret(file, key);
  return { key, file, created: true, notes };
}

/** The lines that show a new bootstrap key, once. */
export function bootstrapKeyBanner(k: LocalBootstrapKey, tenant: string, gatewayUrl: string): string[] {
  return [
    "",
    `New bootstrap key for tenant "${tenant}" (shown only this once; it is stored in ${k.file}):`,
    "",
    `    ${k.key}`,
    "",
    "It holds every right. Use it to issue real keys, for example:",
    `    curl -H "Service-Repository-Key: ${k.key}" ${gatewayUrl}/api/capabilities`,
    "",
  ];
}
