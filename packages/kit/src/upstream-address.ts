/**
 * Where a service reaches another: an `http://` or `https://` URL, or `unix:/path/to.sock`, a
 * Unix domain socket of a process on the same host (a pod's sidecar, `npm start`) that the
 * other service listens on beside its port (`svc.socket`). Over a socket the bytes skip the TCP
 * stack: a large download through the gateway costs both ends about half the CPU of loopback TCP.
 */
export interface UpstreamAddress {
  /** The origin requests are addressed to; `http://localhost` over a socket. */
  origin: string;
  /** The Host header requests carry. */
  host: string;
  hostname: string;
  port: number;
  /** Set when the upstream is reached over a Unix domain socket. */
  socketPath?: string;
  /** One name per distinct upstream (a socket path or an origin): what pools are keyed by. */
  key: string;
}

const SOCKET_SCHEME = "unix:";

/** Why `text` is not a service address, or undefined when it is one. */
export function serviceUrlProblem(text: string, schemes: readonly string[]): string | undefined {
  const expected = `must be a ${schemes.join(" or ")} URL, or unix:/absolute/path.sock`;
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    return expected;
  }
  if (u.protocol === SOCKET_SCHEME) {
    const path = socketPathOf(u);
    if (!path.startsWith("/") || u.search !== "" || u.hash !== "") return "must name an absolute socket path, such as unix:/run/svc/artifacts.sock";
    return undefined;
  }
  return schemes.includes(u.protocol.replace(/:$/, "")) ? undefined : expected;
}

/** `unix:/p` and `unix:///p` both name /p (a host, as in `unix://host/p`, is not a path). */
function socketPathOf(u: URL): string {
  return u.host === "" ? decodeURIComponent(u.pathname) : "";
}

/** The address of a valid service URL (serviceUrlProblem); a path on it is ignored. */
export function upstreamAddress(text: string): UpstreamAddress {
  const u = new URL(text);
  if (u.protocol === SOCKET_SCHEME) {
    const socketPath = socketPathOf(u);
    return { origin: "http://localhost", host: "localhost", hostname: "localhost", port: 80, socketPath, key: `unix:${socketPath}` };
  }
  const port = Number(u.port || (u.protocol === "https:" ? 443 : 80));
  return { origin: u.origin, host: u.host, hostname: u.hostname, port, key: u.origin };
}
