"""Git-native versioning of datasets.

- ``history``: the comparison of the repository with a base revision and the release
  tags, read by the history lint rules (EC5xx) and by ``bump``;
- ``tags``: release tags as data (names, annotated messages, the releases of a dataset);
- ``release``: creating a release tag (``evalcase tag``) and listing datasets;
- ``revisions``: naming a dataset at a revision (``DATASET@v3``) and reading it there;
- ``bump``: writing the version bumps lint asks for;
- ``changelog``: what changed between two revisions of a dataset (``evalcase diff``);
- ``export``: a dataset at a revision as JSON lines.

This package sits on evalcase.index and never imports evalcase.lint: the commands that
combine both (``tag`` lints before it releases) are in evalcase.actions.
"""
