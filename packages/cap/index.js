// One copy of the runtime: `@tether/ext` holds it, so a CapError thrown here is the one `answer()` knows.
export * from "@tether/ext/cap";
