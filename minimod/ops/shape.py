"""shape operators."""
