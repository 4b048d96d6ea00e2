import { Kind, Type, type ObjectOptions, type Static, type TProperties, type TSchema, type TUnsafe } from "@sinclair/typebox";

/**
 * TypeBox helpers for route schemas: one declaration is both the JSON Schema fastify validates
 * and serializes with and the TypeScript type of the handler's request and answer. Each helper
 * writes the JSON Schema the routes used before TypeBox, so validation messages stay the same
 * (`type: ["string", "null"]`, not TypeBox's `anyOf`, which ajv words differently).
 */

/** The schema, or null: `type: [<type>, "null"]`. */
export function Nullable<T extends TSchema>(schema: T): TUnsafe<Static<T> | null> {
  const { [Kind]: _kind, ...plain } = schema as TSchema & Record<string, unknown>;
  return Type.Unsafe<Static<T> | null>({ ...plain, type: [schema.type as string, "null"] });
}

/** One of these strings: `{ type: "string", enum }` (TypeBox's literal unions are an `anyOf`). */
export function StringEnum<const T extends readonly string[]>(values: T, options: { description?: string } = {}): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ type: "string", enum: [...values], ...options });
}

/**
 * An object the route answers. Every property is optional: fast-json-stringify fails a whole
 * answer over a missing required property, and before TypeBox no answer required any.
 */
export function Answer<P extends TProperties>(properties: P, options?: ObjectOptions) {
  return Type.Partial(Type.Object(properties, options));
}

/** A body without fields, or none at all: `POST .../run` and the like. */
export const EmptyBody = Nullable(Type.Object({}, { additionalProperties: false }));

/** An answer without a body (`reply.code(204).send()`); the schema is the `{ type: "null" }` routes always had. */
export const NoContent = Type.Unsafe<undefined>({ type: "null" });
