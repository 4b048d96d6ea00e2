/**
 * Every length limit on a name or a path, in one place: creation, each route's schema, the
 * router (fastify's maxParamLength), the internal calls between services and the walks all
 * read them from here, so nothing can be created that a later request cannot name.
 */
export const LIMITS = {
  /** A repository name: letters, digits, '.', '_' and '-'. */
  repositoryName: 128,
  /** An artifact path, in characters once decoded. */
  artifactPath: 1024,
  /** One segment of an artifact path, in UTF-8 bytes (what a file system takes for a name). */
  pathSegmentBytes: 255,
  /** A group name. */
  groupName: 200,
  /** A person id after its provider (`oauth/`, `oidc/`, `dev/`). */
  personIdLocal: 255,
  /** A walk's name. */
  walkName: 200,
  /** A scope: a repository name or `*`, then `:` and a path prefix. */
  scope: 1024,
} as const;

/** The longest provider prefix of a person id (`oauth/`). */
const PERSON_PREFIX = "oauth/".length;

/**
 * The longest value one route parameter can carry, once decoded: the router refuses longer
 * ones before any schema sees them, so it must take every name a route accepts (a person id,
 * the longest) and a little over, leaving the schemas to answer an over-long name with a 400
 * that says which limit it broke.
 */
export const ROUTE_PARAM_MAX = Math.max(LIMITS.repositoryName, LIMITS.groupName, LIMITS.walkName, PERSON_PREFIX + LIMITS.personIdLocal) + 64;
