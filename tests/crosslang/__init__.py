"""Cross-language conformance: one corpus written by Python, checked by every target."""
