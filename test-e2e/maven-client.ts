import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ensureDebianPackages } from "@svc/devstack";
import { run, type Run } from "./npm-clients.js";

/**
 * Maven, unmodified, from Debian's packages (installed when missing, the way the suite's servers
 * are): the deploy, dependency and install plugins, junit4 (the dependency plugin does not
 * resolve without it) and the plugins a `mvn deploy` of a jar project runs. Plugins come from
 * Debian's /usr/share/maven-repo, used as a file mirror for every repository but ours.
 */
export const MAVEN_PACKAGES = [
  "maven",
  "libmaven-deploy-plugin-java",
  "libmaven-dependency-plugin-java",
  "libmaven-install-plugin-java",
  "junit4",
  "libmaven-compiler-plugin-java",
  "libmaven-jar-plugin-java",
  "libmaven-resources-plugin-java",
  "libsurefire-java",
];

export const ensureMaven = (): Promise<void> => ensureDebianPackages(MAVEN_PACKAGES);

export interface MavenScratch {
  dir: string;
  settings: string;
  /** The scratch local repository (`-Dmaven.repo.local`). */
  local: string;
  env: Record<string, string>;
}

const xml = (s: string) => s.replace(/[<>&]/g, (c) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;" })[c]!);

/**
 * A scratch folder with its own settings.xml (the key as the server's password, Service-Repository-Name
 * sent through httpHeaders) and local repository, so nothing of the machine's Maven setup leaks in.
 */
export function mavenScratch(dir: string, server: { id: string; repository: string; key?: string }): MavenScratch {
  mkdirSync(join(dir, "home"), { recursive: true });
  const credentials = server.key ? `<username>maven</username><password>${xml(server.key)}</password>` : "";
  const settings = join(dir, "settings.xml");
  writeFileSync(
    settings,
    `<settings>
  <mirrors><mirror><id>debian</id><mirrorOf>*,!${server.id}</mirrorOf><url>file:///usr/share/maven-repo</url></mirror></mirrors>
  <servers><server><id>${server.id}</id>${credentials}
    <configuration><httpHeaders><property><name>Service-Repository-Name</name><value>${xml(server.repository)}</value></property></httpHeaders></configuration>
  </server></servers>
</settings>
`,
  );
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: join(dir, "home"), MAVEN_OPTS: "-Xmx256m -XX:TieredStopAtLevel=1" };
  return { dir, settings, local: join(dir, "m2"), env };
}

/** A jar project: one class whose method answers `greeting`, optionally depending on another artifact. */
export function jarProject(dir: string, p: { groupId: string; artifactId: string; version: string; url: string; id: string; greeting?: string; dependsOn?: string; uses?: string }): string {
  const pkg = join(dir, "src", "main", "java", "demo");
  mkdirSync(pkg, { recursive: true });
  const [dg, da, dv] = p.dependsOn?.split(":") ?? [];
  const dependency = p.dependsOn ? `<dependencies><dependency><groupId>${dg}</groupId><artifactId>${da}</artifactId><version>${dv}</version></dependency></dependencies>` : "";
  writeFileSync(
    join(dir, "pom.xml"),
    `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>${p.groupId}</groupId><artifactId>${p.artifactId}</artifactId><version>${p.version}</version><packaging>jar</packaging>
  <properties><maven.compiler.source>11</maven.compiler.source><maven.compiler.target>11</maven.compiler.target><project.build.sourceEncoding>UTF-8</project.build.sourceEncoding></properties>
  ${dependency}
  <repositories><repository><id>${p.id}</id><url>${p.url}</url><snapshots><enabled>true</enabled></snapshots></repository></repositories>
  <distributionManagement>
    <repository><id>${p.id}</id><url>${p.url}</url></repository>
    <snapshotRepository><id>${p.id}</id><url>${p.url}</url></snapshotRepository>
  </distributionManagement>
</project>
`,
  );
  const cls = p.artifactId.replace(/[^A-Za-z0-9]/g, "_");
  const body = p.uses ? `return ${p.uses}.greet();` : `return ${JSON.stringify(p.greeting ?? "hello")};`;
  writeFileSync(join(pkg, `C_${cls}.java`), `package demo;\npublic class C_${cls} { public static String greet() { ${body} } }\n`);
  return dir;
}

/** `mvn` in batch mode with the scratch settings and local repository. */
export function mvn(m: MavenScratch, args: string[], cwd: string): Promise<Run> {
  return run("mvn", ["--batch-mode", "--no-transfer-progress", "-s", m.settings, `-Dmaven.repo.local=${m.local}`, ...args], { cwd, env: m.env, timeoutMs: 300_000 });
}
