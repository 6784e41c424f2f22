"""elemwise operators."""
