"""Grades answers with OpenAI evals' own ``Includes`` eval class, sample by sample.

Usage: python evals_grade.py <samples.jsonl> <answers.json> <out-dir>
``answers.json`` is ``[[line_index, answer], ...]``: each answer is given to the sample
on that line of the exported file, through a local completion function, and
``Includes.eval_sample`` (the code ``oaieval`` runs for each sample) decides it.
Prints ``{"verdicts": [true|false, ...]}`` in the order of ``answers.json``.
"""

import json
import random
import sys
from pathlib import Path

import evals.record
from evals.api import CompletionFn, CompletionResult
from evals.base import RunSpec
from evals.elsuite.basic.includes import Includes


class Result(CompletionResult):
    def __init__(self, text: str) -> None:
        self.text = text

    def get_completions(self) -> list[str]:
        return [self.text]


class Local(CompletionFn):  # answers with the answer the test chose for this sample
    answer = ""

    def __call__(self, prompt, **kwargs):  # type: ignore[no-untyped-def]
        return Result(self.answer)


samples = [json.loads(x) for x in Path(sys.argv[1]).read_text("utf-8").splitlines() if x]
answers = json.loads(Path(sys.argv[2]).read_text("utf-8"))
out = Path(sys.argv[3])
local = Local()
spec = RunSpec(completion_fns=["local"], eval_name="cases.includes.v1", base_eval="cases",
               split="test", run_config={}, created_by="evalcase")  # fmt: skip
recorder = evals.record.LocalRecorder(str(out / "includes.jsonl"), spec)
ev = Includes(completion_fns=[local], samples_jsonl=sys.argv[1], eval_registry_path=out,
              name="cases.includes.v1")  # fmt: skip
assert len(ev.get_samples()) == len(samples)  # evals' own loader reads every line
verdicts = []
with recorder.as_default_recorder("evalcase"):
    for i, (line, answer) in enumerate(answers):
        local.answer = answer
        with recorder.as_default_recorder(f"sample-{i}"):
            verdicts.append(bool(ev.eval_sample(samples[line], random.Random(i))))
print(json.dumps({"verdicts": verdicts}))
