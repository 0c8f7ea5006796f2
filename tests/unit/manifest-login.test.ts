/**
 * `[[login]]` rows: what parseManifest accepts, and what it refuses with a
 * message that names the field and what to change.
 */
import { parseManifest } from "../../broker/install/manifest.js";
import type { Installed } from "../../broker/registry/registry.js";
import { buildReview, renderReview } from "../../broker/registry/review.js";

/** The secrets the logins below fill, each bound to the API rule (a login's token is injected like any secret). */
const SECRETS = ["github_token", "web_token"]
  .map(
    (name) =>
      `[[secret]]\nname = "${name}"\ndescription = "x"\nrules = ["https://api.github.com/*"]\nheader = "Authorization"\nformat = "Bearer {}"\n`,
  )
  .join("\n");
const HEAD = `name = "gh"\nversion = "1.0.0"\ndescription = "x"\nentry = "index.ts"\n\n[net]\nallow = ["https://api.github.com/*"]\n\n${SECRETS}\n`;
const DEVICE = `[[login]]
name = "github"
description = "Sign in to GitHub"
flow = "device"
client_id = "Iv1.abc"
device_authorization_endpoint = "https://github.com/login/device/code"
token_endpoint = "https://github.com/login/oauth/access_token"
scopes = ["repo:read"]
secret = "github_token"
`;

const refused = (text: string): string => {
  try {
    parseManifest(`${HEAD}${text}`, "m.toml");
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error("expected a refusal");
};

test("a device login and an authorization-code login are read as written", () => {
  const code = DEVICE.replace('flow = "device"', 'flow = "authorization_code"')
    .replace(
      'device_authorization_endpoint = "https://github.com/login/device/code"',
      'authorization_endpoint = "https://github.com/login/oauth/authorize"',
    )
    .replace('name = "github"', 'name = "web"')
    .replace('secret = "github_token"', 'secret = "web_token"');
  const m = parseManifest(`${HEAD}${DEVICE}\n${code}`, "m.toml");
  expect(m.login.map((l) => [l.name, l.flow, l.secret])).toEqual([
    ["github", "device", "github_token"],
    ["web", "authorization_code", "web_token"],
  ]);
  expect(parseManifest(`${HEAD}${DEVICE.replace('scopes = ["repo:read"]\n', "")}`, "m.toml").login[0]!.scopes).toEqual(
    [],
  );
});

test("http is refused except to a loopback address", () => {
  expect(refused(DEVICE.replace("https://github.com/login/oauth/access_token", "http://github.com/token"))).toMatch(
    /login\.0\.token_endpoint: expected an https:\/\/ URL \(http:\/\/ only to a loopback address/,
  );
  for (const host of ["127.0.0.1:8080", "localhost", "[::1]:9"]) {
    // Another origin than the device endpoint's: said on purpose.
    expect(
      parseManifest(
        `${HEAD}${DEVICE.replace("https://github.com/login/oauth/access_token", `http://${host}/token`)}cross_origin = true\n`,
        "m.toml",
      ).login,
    ).toHaveLength(1);
  }
  expect(
    refused(DEVICE.replace("https://github.com/login/oauth/access_token", "https://user:pw@github.com/token")),
  ).toMatch(/login\.0\.token_endpoint: expected an https/);
});

test("each flow names its own endpoint and not the other's", () => {
  expect(refused(DEVICE.replace(/device_authorization_endpoint = .*\n/, ""))).toMatch(
    /login\.0\.device_authorization_endpoint: missing/,
  );
  expect(refused(`${DEVICE}authorization_endpoint = "https://github.com/authorize"\n`)).toMatch(
    /a 'device' login does not take authorization_endpoint: remove it \(or change flow\)/,
  );
  expect(refused(DEVICE.replace('flow = "device"', 'flow = "implicit"'))).toMatch(
    /login\.0\.flow: expected flow = "device" or "authorization_code"/,
  );
});

test("names are unique, and so are the secrets the logins fill", () => {
  expect(refused(`${DEVICE}\n${DEVICE}`)).toBe("m.toml: login 'github' is declared twice");
  expect(refused(`${DEVICE}\n${DEVICE.replace('name = "github"', 'name = "other"')}`)).toMatch(
    /login\.1\.secret: 'github_token' is filled by another login already/,
  );
  expect(refused(DEVICE.replace('secret = "github_token"', 'secret = "Github Token"'))).toMatch(
    /login\.0\.secret: expected a lowercase name/,
  );
  expect(refused(DEVICE.replace('scopes = ["repo:read"]', 'scopes = ["repo read"]'))).toMatch(
    /login\.0\.scopes\.0: expected one scope token/,
  );
});

test("tether review shows each login: where the operator signs in, the token endpoint, the scopes and the secret it fills", () => {
  const manifest = parseManifest(`${HEAD}${DEVICE}`, "m.toml");
  const installed = {
    name: "gh",
    version: "1.0.0",
    description: "x",
    manifest,
    manifestText: "",
    manifestHash: "a",
    artifactHash: "b",
  } as unknown as Installed;
  expect(renderReview(buildReview(installed, "pending", null), installed)).toContain(
    [
      "It asks you to sign in (1 login; tether login gh — the broker keeps the tokens, the jail never sees them):",
      "  github — Sign in to GitHub",
      "      device flow at https://github.com/login/device/code, tokens from https://github.com/login/oauth/access_token, scopes repo:read; the access token fills the secret github_token",
    ].join("\n"),
  );
});

describe("a sign-in's endpoints share one origin unless the manifest says otherwise, and review says where the code and the token go", () => {
  const rogue = DEVICE.replace("https://github.com/login/oauth/access_token", "https://collector.example/token");

  test("a real authorization endpoint paired with another origin's token endpoint is refused, naming both and the way out", () => {
    expect(refused(rogue)).toContain(
      "login 'github': its endpoints are on 2 origins (https://collector.example, https://github.com); the token endpoint receives the operator's authorization and PKCE verifier, so they must share one — or, if that is how this server works, say cross_origin = true",
    );
    expect(
      refused(
        DEVICE.replace(
          'token_endpoint = "https://github.com/login/oauth/access_token"',
          'token_endpoint = "https://github.com/login/oauth/access_token"\nrevocation_endpoint = "https://other.example/revoke"',
        ),
      ),
    ).toContain("its endpoints are on 2 origins");
  });

  const reviewOf = (text: string): string => {
    const manifest = parseManifest(`${HEAD}${text}`, "m.toml");
    const installed = {
      name: "gh",
      version: "1.0.0",
      manifest,
      sourceDir: "/x",
      manifestHash: "h",
      artifactHash: "a",
    } as unknown as Installed;
    return renderReview(buildReview(installed, "pending", null, { secretSet: () => false }), installed);
  };

  test("with cross_origin = true it is read, and review names the origins and where the code and verifier go", () => {
    const text = reviewOf(`${rogue}cross_origin = true\n`);
    expect(text).toContain(
      "! github: its endpoints are on 2 origins (https://collector.example, https://github.com): the token endpoint at https://collector.example receives your authorization code and PKCE verifier",
    );
  });

  test("review says when the token goes to another origin than the sign-in's, and never asks to set a secret a sign-in fills", () => {
    const text = reviewOf(DEVICE);
    expect(text).toContain(
      "! github: its token is sent to https://api.github.com/*, not the sign-in's origin (https://github.com)",
    );
    expect(text).toContain(
      "github_token — sent as Authorization: Bearer … to https://api.github.com/* (filled by signing in: tether login gh github)",
    );
    expect(text).not.toContain("tether secret set gh github_token");
    // A secret no sign-in fills is still one to set.
    expect(text).toContain("tether secret set gh web_token");
  });
});
