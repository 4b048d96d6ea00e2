export { makeKey, parseKey, keyId, isTenant, KEY_PREFIX, type ParsedKey, type KeyProblem } from "./key-format.js";
