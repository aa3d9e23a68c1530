"""What a repository holds, read without the linter: per-file facts (``facts``), their
analysis and cache (``analysis``, ``cache``), the index of every file (``repo``), the one
resolver of references (``refs``), content digests (``digest``), fixture resolution for
export (``resolve``) and the dataset reader for runners (``dataset``)."""
