/**
 * Secrets without a satellite: the manifest's `[[secret]]` checks, the file
 * store's modes and atomic writes, the redactor, and an upgrade's diff.
 * (Injection over real satellites: tests/integration/secrets.test.ts.)
 */
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseManifest } from "../../broker/install/manifest.js";
import { diffGrants, requestedGrants, widens } from "../../broker/registry/grants.js";
import { renderDiff } from "../../broker/registry/review.js";
import { Redactor } from "../../broker/secrets/redact.js";
import { FileSecrets, SecretStoreError } from "../../broker/secrets/store.js";

const HEAD = `name = "gh"\nversion = "1.0.0"\ndescription = "d"\nentry = "index.ts"\n[net]\nallow = ["https://api.github.com/repos", "https://cdn.example.com"]\n`;
const secret = (body: string) =>
  parseManifest(`${HEAD}[[secret]]\nname = "github_token"\ndescription = "a token"\n${body}`, "m.toml");
const problem = (body: string) => {
  try {
    secret(body);
    return "";
  } catch (err) {
    return (err as Error).message;
  }
};

describe("[[secret]] in the manifest", () => {
  test("a binding to its own rule, in a header with a format", () => {
    const m = secret(`rules = ["https://api.github.com/repos"]\nheader = "Authorization"\nformat = "Bearer {}"\n`);
    expect(m.secret).toEqual([
      {
        name: "github_token",
        description: "a token",
        rules: ["https://api.github.com/repos"],
        header: "Authorization",
        format: "Bearer {}",
      },
    ]);
    expect(requestedGrants(m).secrets).toEqual([
      { name: "github_token", rules: ["https://api.github.com/repos"], header: "Authorization", format: "Bearer {}" },
    ]);
    expect(secret(`rules = ["https://cdn.example.com"]\nquery = "api_key"\n`).secret[0]!.format).toBe("{}");
  });

  test.each([
    [
      'rules = ["https://evil.example"]\nheader = "X-Key"\n',
      "secret.0.rules.0: 'https://evil.example' is not one of its [net] allow rules",
    ],
    ['rules = ["https://cdn.example.com"]\n', "give exactly one of header"],
    ['rules = ["https://cdn.example.com"]\nheader = "X-Key"\nquery = "k"\n', "give exactly one of header"],
    ['rules = ["https://cdn.example.com"]\nheader = "X-Key"\nformat = "Bearer"\n', "must hold {} exactly once"],
    ['rules = ["https://cdn.example.com"]\nheader = "X-Key"\nformat = "{} {}"\n', "must hold {} exactly once"],
    [
      'rules = ["https://cdn.example.com"]\nheader = "Host"\n',
      "secret.0.header: 'Host' is a header the broker sets or strips itself",
    ],
    [
      'rules = ["https://cdn.example.com"]\nheader = "content-length"\n',
      "is a header the broker sets or strips itself",
    ],
    ['rules = ["https://cdn.example.com"]\nheader = "Connection"\n', "is a header the broker sets or strips itself"],
    [
      'rules = ["https://cdn.example.com"]\nheader = "Proxy-Authorization"\n',
      "is a header the broker sets or strips itself",
    ],
    [
      'rules = ["https://cdn.example.com"]\nheader = "X-HTTP-Method-Override"\n',
      "is a header the broker sets or strips itself",
    ],
    ['rules = ["https://cdn.example.com"]\nquery = "_method"\n', "'_method' overrides the request's method"],
    ['rules = ["https://cdn.example.com"]\nheader = "Bad Header"\n', "secret.0.header: expected an HTTP header name"],
    ['rules = []\nheader = "X-Key"\n', "secret.0.rules: expected at least one of its [net] allow rules"],
    ['rules = ["https://cdn.example.com"]\nheader = "X-Key"\ncolour = "red"\n', "secret.0.colour: Invalid key"],
  ])("refused: %j", (body, message) => {
    expect(problem(body)).toContain(message);
  });

  test("a name declared twice, and a name that is not an identifier", () => {
    const twice = `${HEAD}[[secret]]\nname = "k"\ndescription = ""\nrules = ["https://cdn.example.com"]\nheader = "X-A"\n[[secret]]\nname = "k"\ndescription = ""\nrules = ["https://cdn.example.com"]\nheader = "X-B"\n`;
    expect(() => parseManifest(twice, "m.toml")).toThrow("m.toml: secret 'k' is declared twice");
    expect(() => parseManifest(twice.replace(/name = "k"/g, 'name = "Key!"'), "m.toml")).toThrow(
      "secret.0.name: expected a lowercase name",
    );
  });
});

describe("an upgrade's diff", () => {
  const base = requestedGrants(
    secret(`rules = ["https://api.github.com/repos"]\nheader = "Authorization"\nformat = "Bearer {}"\n`),
  );
  test("a new secret, a new rule for one, another place or format widen; a secret dropped does not", () => {
    const none = { ...base, secrets: [] };
    const added = diffGrants(none, base);
    expect(widens(added)).toBe(true);
    expect(renderDiff(added)).toEqual([
      "  + secret github_token → https://api.github.com/repos as Authorization: Bearer …",
    ]);
    const moreRules = {
      ...base,
      secrets: [{ ...base.secrets[0]!, rules: ["https://api.github.com/repos", "https://cdn.example.com"] }],
    };
    expect(diffGrants(base, moreRules).addedSecrets).toEqual([
      "github_token → https://cdn.example.com as Authorization: Bearer …",
    ]);
    const query = {
      ...base,
      secrets: [{ name: "github_token", rules: ["https://api.github.com/repos"], query: "access_token", format: "{}" }],
    };
    expect(widens(diffGrants(base, query))).toBe(true);
    expect(renderDiff(diffGrants(base, query))).toContain(
      "  + secret github_token → https://api.github.com/repos as ?access_token=…",
    );
    expect(widens(diffGrants(base, none))).toBe(false);
    expect(renderDiff(diffGrants(base, none))).toEqual([
      "  - secret github_token → https://api.github.com/repos as Authorization: Bearer …",
    ]);
  });
});

describe("the file store", () => {
  let home: string;
  beforeEach(() => (home = mkdtempSync(join(tmpdir(), "tether-secrets-"))));
  afterEach(() => rmSync(home, { recursive: true, force: true }));

  test("set writes <home>/secrets/<ext>.<name> 0600 in a 0700 folder, atomically; get, names, unset", () => {
    const store = new FileSecrets(home);
    expect(store.get("gh", "github_token")).toBeNull();
    store.set("gh", "github_token", "ghp_abcdefgh12345678");
    store.set("gh", "other", "zzzzzzzz");
    expect(statSync(join(home, "secrets")).mode & 0o777).toBe(0o700);
    expect(statSync(join(home, "secrets", "gh.github_token")).mode & 0o777).toBe(0o600);
    expect(readdirSync(join(home, "secrets")).sort()).toEqual(["gh.github_token", "gh.other"]); // no temporary file left
    expect(store.get("gh", "github_token")).toBe("ghp_abcdefgh12345678");
    expect(store.names("gh")).toEqual(["github_token", "other"]);
    expect(store.unset("gh", "other")).toBe(true);
    expect(store.unset("gh", "other")).toBe(false);
    expect(store.names("gh")).toEqual(["github_token"]);
  });

  test("a file or folder other users could read is refused, naming the chmod", () => {
    const store = new FileSecrets(home);
    store.set("gh", "github_token", "ghp_abcdefgh12345678");
    const file = join(home, "secrets", "gh.github_token");
    chmodSync(file, 0o644);
    expect(() => store.get("gh", "github_token")).toThrow(
      `${file} has mode 0644: other users could read it; run: chmod 600 ${file}`,
    );
    chmodSync(file, 0o600);
    chmodSync(join(home, "secrets"), 0o755);
    expect(() => store.get("gh", "github_token")).toThrow(`run: chmod 700 ${join(home, "secrets")}`);
    chmodSync(join(home, "secrets"), 0o700);
    expect(store.get("gh", "github_token")).toBe("ghp_abcdefgh12345678");
  });

  test("a link, a file that is not the store's, and bad values are refused", () => {
    const store = new FileSecrets(home);
    store.set("gh", "github_token", "ghp_abcdefgh12345678");
    const other = join(home, "elsewhere");
    writeFileSync(other, "aaaaaaaaaa", { mode: 0o600 });
    symlinkSync(other, join(home, "secrets", "ln.a"));
    expect(() => store.get("ln", "a")).toThrow("is a symbolic link, which is not followed");
    mkdirSync(join(home, "secrets", "dir.a"));
    expect(() => store.get("dir", "a")).toThrow(SecretStoreError);
    expect(() => store.set("gh", "x", "short")).toThrow("shorter than 8 characters");
    expect(() => store.set("gh", "x", "has\nline break")).toThrow("printable ASCII");
    expect(() => store.set("../up", "x", "aaaaaaaaaa")).toThrow("is not an extension name");
  });
});

describe("the redactor", () => {
  const r = new Redactor();
  r.add("s3cr3t/v@lue+x", "Bearer s3cr3t/v@lue+x");
  test("the value, its formatted form, percent-encodings and base64 become [secret]", () => {
    expect(r.text("auth: Bearer s3cr3t/v@lue+x; raw s3cr3t/v@lue+x")).toBe("auth: [secret]; raw [secret]");
    expect(r.text("?k=s3cr3t%2Fv%40lue%2Bx&j=Bearer+s3cr3t%2Fv%40lue%2Bx")).toBe("?k=[secret]&j=[secret]");
    expect(r.text(Buffer.from("s3cr3t/v@lue+x").toString("base64"))).toBe("[secret]");
    const body = Buffer.from(`{"a":"s3cr3t/v@lue+x","b":"s3cr3t/v@lue+xs3cr3t/v@lue+x"}`);
    expect(Buffer.from(r.bytes(body)).toString()).toBe(`{"a":"[secret]","b":"[secret][secret]"}`);
    expect(r.text("nothing here")).toBe("nothing here");
  });
});
