"""Browser tests (make test-browser)."""
