"""The book's tools: running the pages as notebooks (:mod:`tools.notebooks`) and serving the
built site to a guarded headless Chromium (:mod:`tools.browser`). The PDF, the benchmarks and
the tests use them; nothing here imports the tests."""
