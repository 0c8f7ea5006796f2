import { assertEquals, testKit } from "@tether/ext/testing";
import * as github from "./index.ts";

const API = "http://127.0.0.1:17313";
// The broker would add the token and redact its echo: here the API's answer already says `[secret]`.
const ME = { login: "octo-operator", id: 1, debug: { authorization: "[secret]" } };

Deno.test("whoami asks /user naming the sign-in's secret, never a token, and answers the login", async () => {
  const kit = testKit(github, { name: "github-issues", net: { [`GET ${API}/user`]: { json: ME } } });
  assertEquals(await kit.tool("whoami", {}), {
    ok: true,
    value: {
      content: [
        { type: "text", text: "signed in as octo-operator (the API echoed Authorization: [secret])" },
        { type: "json", json: ME },
      ],
      terminate: false,
    },
  });
  assertEquals(
    kit.net.requests.map((r) => [r.method, r.url, r.secret, r.headers]),
    [["GET", `${API}/user`, "github_token", []]],
  );
});

Deno.test("whoami: the API refusing the token is a refusal naming the status", async () => {
  const kit = testKit(github, {
    name: "github-issues",
    net: { [`GET ${API}/user`]: { status: 401, json: { message: "Bad credentials" } } },
  });
  assertEquals(await kit.tool("whoami", {}), {
    ok: false,
    error: { code: "refused", msg: "The API answered 401 for /user" },
  });
});

Deno.test("list_issues lists a repository's issues, one line each", async () => {
  const issues = [
    { number: 7, title: "Crash on start" },
    { number: 9, title: "Docs typo" },
  ];
  const kit = testKit(github, {
    name: "github-issues",
    net: { [`GET ${API}/repos/acme/app/issues`]: { json: issues } },
  });
  assertEquals(await kit.tool("list_issues", { repo: "acme/app" }), {
    ok: true,
    value: {
      content: [
        { type: "text", text: "#7 Crash on start\n#9 Docs typo" },
        { type: "json", json: issues },
      ],
      terminate: false,
    },
  });
  assertEquals(kit.net.requests[0]?.secret, "github_token");
});
