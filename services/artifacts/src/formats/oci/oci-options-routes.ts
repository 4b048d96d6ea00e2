import { Type } from "@sinclair/typebox";
import { LIMITS, invalid, notFound } from "@svc/contracts";
import { Answer, errorResponses, type ServiceApp } from "@svc/kit";
import type { OciStore } from "./oci-store.js";

const nameParam = Type.Object({ name: Type.String({ minLength: 1, maxLength: LIMITS.repositoryName }) });
/** Also a field of POST /api/repositories and PATCH /api/repositories/<name> (FormatModule.options). */
export const IMMUTABLE_TAGS = Type.Boolean({ description: "oci only: whether a pushed tag stays on its manifest: moving or deleting it is refused (DENIED); false by default" });
/** Image retention, applied by a walk's `retention` job (oci-gc.ts). */
export const KEEP_TAGS = Type.Union([Type.Integer({ minimum: 1, maximum: 100_000 }), Type.Null()], {
  description: "oci only: keep the newest N tags of each image (by push time); a walk's retention job removes older tags, leaving their manifests untagged; null: all are kept",
});
export const UNTAGGED_AFTER = Type.Union([Type.String({ minLength: 2, maxLength: 64 }), Type.Null()], {
  description: "oci only: a walk's retention job removes manifests untagged and pushed longer ago than this ISO-8601 duration (P14D), unless an index or a subject present keeps them; null: never",
});
const optionsSchema = Type.Object(
  {
    immutableTags: IMMUTABLE_TAGS,
  },
  { additionalProperties: false },
);
const optionsAnswer = Answer(optionsSchema.properties);

/** `/api/repositories/<name>/oci`: an OCI repository's options, for administrators (manage rights, as the gateway requires on /api/). */
export function ociOptionsRoutes(app: ServiceApp, deps: { store: Pick<OciStore, "immutableTags" | "setImmutableTags">; formatOf: (repository: string) => string | undefined }): void {
  const oci = (name: string) => {
    const format = deps.formatOf(name);
    if (format === undefined) throw notFound(`no repository named ${name}`);
    if (format !== "oci") throw invalid("name", `repository ${name} has format ${format}: OCI options apply to oci repositories`);
  };
  app.get("/api/repositories/:name/oci", { schema: { params: nameParam, response: { 200: optionsAnswer, ...errorResponses(400, 404) } } }, async (req) => {
    oci(req.params.name);
    return { immutableTags: await deps.store.immutableTags(req.params.name) };
  });
  app.put(
    "/api/repositories/:name/oci",
    { schema: { params: nameParam, body: optionsSchema, response: { 200: optionsAnswer, ...errorResponses(400, 404, 413, 415) } } },
    async (req) => {
      oci(req.params.name);
      await deps.store.setImmutableTags(req.params.name, req.body.immutableTags);
      req.log.info({ repository: req.params.name, immutableTags: req.body.immutableTags, principal: req.principal.id }, "oci options set");
      return { immutableTags: req.body.immutableTags };
    },
  );
}
