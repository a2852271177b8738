"""The built-in plugins: gang, drf, priority, proportion, binpack, conformance."""
