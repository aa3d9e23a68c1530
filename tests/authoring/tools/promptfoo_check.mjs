// Checks exported promptfoo configurations with promptfoo's own schemas (the zod
// schemas the package exports, from which promptfoo generates its published
// config-schema.json). Usage: node promptfoo_check.mjs <schema-out.json> <config.json>...
// (several configurations in one run: node's start and promptfoo's import cost 1-2 s of
// CPU each time). Prints, for each configuration in order, one line {"tests": n,
// "prompts": n, "test_errors": [...], "config_errors": [...], "assertion_types":
// [promptfoo's built-in assertion type names]}, and writes the JSON Schema of
// UnifiedConfigSchema (draft-07, as promptfoo publishes it) to schema-out.
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(process.cwd() + "/");
const promptfoo = await import(require.resolve("promptfoo"));
const { z } = await import(require.resolve("zod"));

const check = (path) => {
  const exported = JSON.parse(readFileSync(path, "utf8"));
  const tests = exported.tests ?? [];
  const testErrors = [];
  tests.forEach((test, i) => {
    const parsed = promptfoo.TestCaseSchema.safeParse(test);
    if (!parsed.success) testErrors.push({ index: i, issues: parsed.error.issues });
  });
  const config = { ...exported, providers: ["echo"] };
  const whole = promptfoo.UnifiedConfigSchema.safeParse(config);
  return {
    tests: tests.length,
    prompts: (exported.prompts ?? []).length,
    test_errors: testErrors,
    config_errors: whole.success ? [] : whole.error.issues,
    assertion_types: promptfoo.BaseAssertionTypesSchema.options,
  };
};
const [schemaOut, ...configs] = process.argv.slice(2);

// The published schema is generated from the schema inside UnifiedConfigSchema's pipe.
const inner = promptfoo.UnifiedConfigSchema._def.in ?? promptfoo.UnifiedConfigSchema;
const WRAPPERS = new Set(["optional", "nullable", "pipe", "transform"]);
const unwrap = (s) => {
  while (s?._def && WRAPPERS.has(s._def.type)) {
    const next = s._def.innerType ?? s._def.in;
    if (!next) break;
    s = next;
  }
  return s;
};
const schema = z.toJSONSchema(inner, {
  unrepresentable: "any",
  override: (ctx) => {
    if (Object.keys(ctx.jsonSchema).length === 0) {
      const base = unwrap(ctx.zodSchema);
      if (base !== ctx.zodSchema) {
        const { $schema, ...rest } = z.toJSONSchema(base, { unrepresentable: "any" });
        Object.assign(ctx.jsonSchema, rest);
      }
    }
  },
});
delete schema.$schema;
writeFileSync(
  schemaOut,
  JSON.stringify({
    $ref: "#/definitions/PromptfooConfigSchema",
    definitions: { PromptfooConfigSchema: schema },
    $schema: "http://json-schema.org/draft-07/schema#",
  }),
);
for (const path of configs) console.log(JSON.stringify(check(path)));
