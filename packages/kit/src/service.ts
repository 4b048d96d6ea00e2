import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyRequest, type FastifyServerOptions, type RawReplyDefaultExpression, type RawRequestDefaultExpression, type RawServerDefault } from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { Logger } from "pino";
import { ROUTE_PARAM_MAX, ServiceError, type Principal } from "@svc/contracts";
import { answerClientError, answerFrameworkError, installErrorHandling, refuseConnect } from "./errors.js";
import { installInputGuard } from "./input-guard.js";
import { BODY_IN_TRAILER, ReplayGuard, identityVerifier } from "./identity.js";
import { checkedBody, type BodyBinding } from "./identity-body.js";
import { declaredContentType, hasRequestBody } from "./request-body.js";
import { instrumentHttp, type ServiceMetrics } from "./metrics.js";
import { LazyChildLogger } from "./logger.js";
import { describeApi } from "./openapi.js";
import { problemSchema } from "./paging.js";
import { installAuditTrail, type AuditSink } from "./audit-trail.js";

declare module "fastify" {
  interface FastifyRequest {
    /** Who the gateway says made the request (set on upstream services). */
    principal: Principal;
  }
  interface FastifyInstance {
    /** Where the audit trail's writer goes once boot has the database (audit-trail.ts); upstream services only. */
    auditSink?: AuditSink;
  }
}

export interface Check {
  name: string;
  check: () => Promise<{ ok: true } | { ok: false; error: string }>;
}

export interface BaseAppOptions {
  log: Logger;
  /** Upstream services: the internal secret the gateway signs with. The gateway passes none. */
  internalSecret?: string;
  /** Also accepted while a new internal secret rolls out (svc.internal-secret-previous). */
  internalSecretPrevious?: string;
  /** Dependencies that must answer for the service to be ready. */
  checks?: Check[];
  /**
   * Whether a health probe may see per-dependency detail. Default: yes (upstream services are
   * reachable only inside the deployment). The gateway shows detail only to administrators.
   */
  healthDetail?: (request: FastifyRequest) => Promise<boolean>;
  /** Counts and times every request into this registry. */
  metrics?: ServiceMetrics;
  fastify?: Partial<FastifyServerOptions>;
}

/** What every upstream service's `buildApp(deps)` needs for its base app; the service's own deps extend it. */
export interface UpstreamAppDeps {
  log: Logger;
  internalSecret: string;
  internalSecretPrevious?: string;
  checks: Check[];
  metrics?: ServiceMetrics;
}

/** A service's fastify instance: route schemas (TypeBox) type each handler's request and answer. */
export type ServiceApp = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, TypeBoxTypeProvider>;

/**
 * The common shape of every service: pino logger, one error model, `/health/live` and
 * `/health/ready`, and on upstream services a check that each request carries the gateway's
 * signed identity (health probes excepted).
 */
/** How far a signature's timestamp may be from this clock; also how long a signature is remembered. */
const SKEW_SECONDS = 60;

export function createBaseApp(opts: BaseAppOptions): ServiceApp {
  const app = Fastify({
    loggerInstance: opts.log,
    // Per-request log lines cost throughput on the hot path; failures are logged by the error handler.
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: (logger, bindings, options) => new LazyChildLogger(logger, bindings, options) as unknown as FastifyBaseLogger,
    return503OnClosing: true,
    bodyLimit: 1024 * 1024,
    // Every name a route takes fits (packages/contracts limits.ts); the route's schema refuses
    // one over its own limit with a 400 naming it, rather than the router with a bare 414.
    routerOptions: { maxParamLength: ROUTE_PARAM_MAX },
    // Refusals fastify answers before any hook (a bad URL, the parser's 400/408/431): in the
    // caller's format too.
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: answerClientError,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false } },
    ...opts.fastify,
  });
  installErrorHandling(app);
  app.server.on("connect", refuseConnect);
  app.addSchema(problemSchema);
  if (opts.metrics) instrumentHttp(app, opts.metrics);
  app.decorateRequest("principal", null as unknown as Principal);
  // The services behind the gateway describe their /api routes; the gateway's own only forward.
  if (opts.internalSecret) describeApi(app, opts.metrics);
  // The gateway forwards bodies unread; the services that store them check what they hold.
  if (opts.internalSecret) installInputGuard(app);
  if (opts.internalSecret) {
    const sink: AuditSink = { service: "", spec: {} };
    app.decorate("auditSink", sink);
    installAuditTrail(app, sink);
  }

  if (opts.internalSecret) {
    // Per process: a replica refuses a signature it has accepted before (docs/internals/internal-traffic.md).
    const verify = identityVerifier([opts.internalSecret, opts.internalSecretPrevious ?? ""], { maxSkewSeconds: SKEW_SECONDS, replay: new ReplayGuard(SKEW_SECONDS) });
    const bindings = new WeakMap<FastifyRequest, BodyBinding>();
    const refuse = (request: FastifyRequest, reason: string) => {
      request.log.warn({ reason, method: request.method, url: request.url }, "refused a request that did not come through the gateway");
      return new ServiceError("unauthenticated", "this service accepts requests only through the gateway");
    };
    app.addHook("onRequest", async (request) => {
      if (request.url.startsWith("/health/")) return;
      // The Content-Type as sent, even where a route has set it aside (request-body.ts).
      const declared = declaredContentType(request);
      const headers = declared === request.headers["content-type"] ? request.headers : { ...request.headers, "content-type": declared };
      const v = verify(request.method, request.url, headers);
      if (!v.ok) throw refuse(request, v.reason);
      if (v.body === undefined) {
        if (hasRequestBody(request)) throw refuse(request, "unsigned body");
      } else if (v.body === BODY_IN_TRAILER || /^sha256=[\w-]{43}$/.test(v.body)) {
        bindings.set(request, { body: v.body, signature: v.signature, key: v.key });
      } else throw refuse(request, "body binding");
      request.principal = v.principal;
    });
    // Whoever reads the body (a parser, the artifacts store) reads it through the check.
    app.addHook("preParsing", async (request, _reply, payload) => {
      const binding = bindings.get(request);
      if (!binding) return payload;
      const checked = checkedBody(payload, request.raw, binding);
      checked.once("error", (err) => {
        if (err instanceof ServiceError) request.log.warn({ reason: "body", method: request.method, url: request.url }, "refused a request body the gateway did not sign");
      });
      return checked;
    });
    // A body no route read is drained, as Node does with one nobody touched, so the connection can carry the next request.
    app.addHook("onResponse", async (request) => {
      if (bindings.has(request) && !request.raw.complete && !request.raw.destroyed) {
        request.raw.unpipe();
        request.raw.resume();
      }
    });
  }

  // Three probes: live (the process answers), started (start-up is over: it is listening),
  // ready (every dependency answers, so this node can serve).
  const checks = opts.checks ?? [];
  const detail = opts.healthDetail ?? (async () => true);
  app.get("/health/live", async () => ({ status: "up" }));
  app.get("/health/started", async () => ({ status: "up" }));
  app.get("/health/ready", async (req, reply) => {
    const results = await Promise.all(checks.map(async (c) => ({ name: c.name, ...(await c.check()) })));
    const up = results.every((r) => r.ok);
    reply.code(up ? 200 : 503).header("cache-control", "no-store");
    if (!(await detail(req))) return { status: up ? "up" : "down" };
    return {
      status: up ? "up" : "down",
      checks: Object.fromEntries(results.map((r) => [r.name, r.ok ? { status: "up" } : { status: "down", error: r.error }])),
    };
  });
  return app.withTypeProvider<TypeBoxTypeProvider>();
}

/** createBaseApp for an upstream service, from the base-app part of its deps. */
export function createUpstreamApp(deps: UpstreamAppDeps, fastify?: Partial<FastifyServerOptions>): ServiceApp {
  return createBaseApp({ log: deps.log, internalSecret: deps.internalSecret, internalSecretPrevious: deps.internalSecretPrevious, checks: deps.checks, metrics: deps.metrics, ...(fastify ? { fastify } : {}) });
}
