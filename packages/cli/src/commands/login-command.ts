import { hostname } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { apiClient } from "../api-client.js";
import { CliError, EXIT } from "../cli-errors.js";
import type { Command } from "../command-types.js";
import { writeLogin } from "../login-file.js";

interface Started {
  code: string;
  loginPath: string;
  donePath: string;
  expires: string;
  interval: number;
}

interface Done {
  token: string;
  id: string;
  person: string;
  expires: string | null;
}

/**
 * `svc login`: a device-code style sign-in through the console. The client starts a sign-in
 * (POST /api/logins), prints the console's page and a short code, and polls its done URL until
 * the person signed in there and confirmed that code; it then receives a personal key holding
 * all their rights and keeps it, with the server's address, in login-file.ts's file (mode 0600).
 */
export const loginCommand: Command = {
  name: "login",
  summary: "sign in through the console and keep a personal key for the commands that follow",
  subcommands: [
    {
      name: "",
      maxArgs: 0,
      summary: "sign in in a browser; the key is kept in ~/.config/svc/login.json (mode 0600)",
      detail:
        "Prints a console address and a code. Open the address, sign in, check the code and confirm: svc receives a new personal key of yours, holding all your rights (never more), and keeps it with the server's address for every later command given no --key, --key-file, SVC_KEY or SVC_KEY_FILE.",
      examples: ["svc login --url https://repo.example.com"],
      async run(ctx) {
        const base = ctx.serverUrl();
        const api = apiClient({ baseUrl: base, key: undefined });
        const started = await api.json<Started>("POST", "/api/logins", { body: { client: "svc", label: `svc login (${hostname()})` } });
        ctx.out.note(`Open ${api.baseUrl}${started.loginPath} in a browser, sign in, and confirm the code ${started.code}.`);
        ctx.out.note("Waiting for you to confirm…");
        const until = Date.parse(started.expires);
        const signal = ctx.untilInterrupted();
        while (!signal.aborted) {
          const res = await api.request("GET", started.donePath);
          if (res.status === 200) {
            const done = (await res.json()) as Done;
            const file = await writeLogin(ctx.env, { url: api.baseUrl, key: done.token, person: done.person, expires: done.expires });
            ctx.out.out(`Signed in as ${done.person}: personal key ${done.id.slice(0, 12)} kept in ${file} (expires ${done.expires ?? "never"}).`);
            return EXIT.ok;
          }
          await res.body?.cancel();
          if (Date.now() > until) break;
          await sleep(Math.max(1, Number(res.headers.get("retry-after")) || started.interval) * 1000, undefined, { signal }).catch(() => undefined);
        }
        throw new CliError(signal.aborted ? "Sign-in abandoned: nothing was kept." : "Nobody confirmed the sign-in in time (10 minutes): run svc login again.", EXIT.refused);
      },
    },
  ],
};
