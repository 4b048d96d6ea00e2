export * from "./duration.js";
export * from "./settings.js";
export * from "./logger.js";
export * from "./errors.js";
export * from "./identity.js";
export * from "./db.js";
export * from "./messaging.js";
export * from "./service.js";
