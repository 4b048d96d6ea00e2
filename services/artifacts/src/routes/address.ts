import { notFound } from "@svc/contracts";
import { parseArtifactUrl } from "@svc/grants";
import type { Address } from "../domain/artifact-service.js";

/** An artifact named in a JSON body: the same path rules as a `/repository/...` URL. */
export function addressOf(repository: string, path: string, known: ReadonlySet<string>): Address {
  const a = parseArtifactUrl(`/repository/${encodeURIComponent(repository)}/${path.split("/").map(encodeURIComponent).join("/")}`);
  if (!known.has(a.repository)) throw notFound(`no repository named ${a.repository}`);
  return a;
}
