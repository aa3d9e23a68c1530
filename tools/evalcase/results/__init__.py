"""Memory across runs: what every run and grading says, asked across runs.

The run folders stay the facts (``outputs/<commit>/<run_id>/``, ``reports/<commit>/
<run_id>/`` with every grading kept, evalcase.report.gradings); everything here is derived
from them and can be rebuilt at any time.

- :mod:`evalcase.results.refs`: run references (``latest``, ``latest~N``, ``DATASET@vN``,
  a branch, tag or commit), read from the folders; no extra needed.
- :mod:`evalcase.results.noise`: Wilson intervals and Fisher's exact test (standard
  library only), used by ``compare`` and the gates.
- :mod:`evalcase.results.store`: the results store, an embedded DuckDB file indexed from
  the folders (``pip install 'evalcase[results]'``), and its incremental update.
- :mod:`evalcase.results.queries`: ``history``, ``flaky`` and ``trend`` over the store.

Nothing in this package is imported by ``evalcase lint`` (the commit hook).
"""
