// Runs promptfoo's own evaluator (the `evaluate` its package exports, what `promptfoo
// eval` runs; the CLI wrapper itself wants a newer Node than this machine's) over a
// config file. Usage: node promptfoo_eval.mjs <config.json>
// Prints {"results": [{"description": ..., "success": bool}, ...]}.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(process.cwd() + "/");
const promptfoo = await import(require.resolve("promptfoo"));
const config = JSON.parse(readFileSync(process.argv[2], "utf8"));
const summary = await promptfoo.evaluate(config, { cache: false, maxConcurrency: 1 });
const table = await summary.toEvaluateSummary?.() ?? summary;
const results = (table.results ?? []).map((r) => ({
  description: r.testCase?.description,
  success: r.success,
  reason: r.gradingResult?.reason,
}));
console.log(JSON.stringify({ results }));
