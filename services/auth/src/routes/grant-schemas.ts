/** Request and response schemas of a grant, the same for keys, people and groups. */
export const grantSchema = {
  type: "object",
  properties: { scope: { type: "string" }, tokens: { type: "array", items: { type: "string" } }, expires: { type: ["string", "null"] } },
} as const;

export const grantBodyProperties = {
  scope: { type: "string", maxLength: 1024 },
  tokens: { type: "array", items: { type: "string" }, maxItems: 32 },
  expires: { type: ["string", "null"], maxLength: 64 },
} as const;

export const grantBody = {
  type: "object",
  properties: grantBodyProperties,
  required: ["scope", "tokens"],
  additionalProperties: false,
} as const;
