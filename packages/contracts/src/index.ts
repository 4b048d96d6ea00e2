export * from "./errors.js";
export * from "./identity.js";
export * from "./events.js";
