/**
 * The confirmation's "same as" command line: every word `shellWord` makes is
 * read back by a real shell as exactly the text it stands for — a rule or a
 * name with quotes, `$(…)`, backticks, globs, `!`, a newline, a leading dash
 * or nothing at all cannot become a second word, an expansion or a command.
 */
import { execFileSync } from "node:child_process";
import { shellWord } from "../../broker/console/console.js";

const NASTY = [
  "GET https://api.example.com/v1",
  "GET https://*.example.org/in",
  "it's",
  `"double" and 'single'`,
  "$(touch /tmp/pwned) `id` ${HOME}",
  "a; rm -rf ~ && echo #comment",
  "!!",
  "line\nbreak",
  "back\\slash",
  "-rf",
  "--all",
  "",
  "tab\there",
  "~root",
  "glob?[a]*",
  "\u202e bidi",
];

test.each(NASTY)("%j is one shell word, read back as itself", (text) => {
  const out = execFileSync("bash", ["-c", `printf '%s\\0' ${shellWord(text)}`], {
    encoding: "utf8",
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: "/nonexistent" },
  });
  expect(out).toBe(`${text}\0`);
});
