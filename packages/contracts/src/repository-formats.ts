/**
 * How a format is named: the `format` of a repository and the value of `svc.repository-format`.
 * Which formats exist is the artifacts service's format table (services/artifacts/src/formats/index.ts),
 * the one place a format is listed; the service checks a configured name against it at start.
 */
export const FORMAT_NAME = /^[a-z][a-z0-9-]{0,31}$/;
export type RepositoryFormat = string;

export const isFormatName = (v: string): v is RepositoryFormat => FORMAT_NAME.test(v);
