import { Type } from "@sinclair/typebox";
import { Answer, Nullable } from "@svc/kit";

/** Request and response schemas of a grant, the same for keys, people and groups. */
export const grantProperties = { scope: Type.String(), tokens: Type.Array(Type.String()), expires: Nullable(Type.String()) };
export const grantSchema = Answer(grantProperties);
/** The answer to setting a grant: the grant as stored, and `warnings` when there is something the caller should look at. */
export const grantAnswerSchema = Answer({
  ...grantProperties,
  warnings: Type.Array(Type.String(), {
    description: "Present only when there is something to check: e.g. the scope names a repository that does not exist (yet). The grant is stored either way.",
  }),
});

export const grantBodyProperties = {
  scope: Type.String({ maxLength: 1024 }),
  tokens: Type.Array(Type.String(), { maxItems: 32 }),
  expires: Type.Optional(Nullable(Type.String({ maxLength: 64 }))),
};

export const grantBody = Type.Object(grantBodyProperties, { additionalProperties: false });
