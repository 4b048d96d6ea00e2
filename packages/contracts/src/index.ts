export * from "./errors.js";
export * from "./identity.js";
export * from "./events.js";
export * from "./internal-auth.js";
export * from "./internal-admin.js";
export * from "./internal-artifacts.js";
export * from "./internal-console.js";
export * from "./repository-formats.js";
