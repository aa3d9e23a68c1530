"""``evalcase collect``: an OTLP/HTTP trace receiver on 127.0.0.1 that appends what it
receives to an inbox folder, for ``evalcase import`` to turn into draft cases.

- :mod:`evalcase.collect.otlp`: request bodies (OTLP/JSON, OTLP protobuf, gzip) read into
  one canonical OTLP/JSON form (hex trace and span IDs, as the OTel collector's file
  exporter writes), and the marking filter;
- :mod:`evalcase.collect.inbox`: the inbox folder: bounded, append-only, one fsynced line
  per request, rotated by size, torn last lines skipped by its reader;
- :mod:`evalcase.collect.server`: the Starlette application that answers as the OTLP/HTTP
  specification says.

What a sender sends is data: it is bounded (body size, decompressed size, inbox size,
the marking filter's memory) and never names a path or anything to run.
"""
