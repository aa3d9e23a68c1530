"""Memory across runs: what every run and grading says, asked across runs.

The run folders stay the facts (``outputs/<commit>/<run_id>/``, ``reports/<commit>/
<run_id>/`` with every grading kept, evalcase.report.gradings); everything here is derived
from them and can be rebuilt at any time.

- :mod:`evalcase.results.refs`: run references (``latest``, ``latest~N``, ``DATASET@vN``,
  a branch, tag or commit), read from the folders; no extra needed.
- the noise statistics the questions use (Wilson intervals, Fisher's exact test) are
  :mod:`evalcase.grade.noise`, beside the gates and ``compare`` that use them too.
- :mod:`evalcase.results.store`: the results store, an embedded DuckDB file indexed from
  the folders (DuckDB, a base dependency), and its incremental update.
- :mod:`evalcase.results.queries`: ``history``, ``flaky`` and ``trend`` over the store.
- :mod:`evalcase.results.remote`: runs to and from S3-compatible object storage
  (``push``, ``pull``, ``run --publish``; ``pip install 'evalcase[remote]'``).
- :mod:`evalcase.results.remote_index`: ``history``, ``flaky`` and ``trend`` over the
  runs a remote holds, from their index files only (``--from-remote``).
- :mod:`evalcase.results.view` and :mod:`evalcase.results.view_pages`: ``evalcase view``,
  the read-only web viewer over the store (Starlette and uvicorn, base dependencies).

Nothing in this package is imported by ``evalcase lint`` (the commit hook).
"""
